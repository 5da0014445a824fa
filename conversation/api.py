"""REST endpoints of the conversation (DESIGN.md "Interfaces"). Thin: parse, authorise by the
requesting person, call one service, serialise with a declared serializer."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.contrib.auth.models import User
from django.db import connection
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation import selectors, services
from conversation.models import Session, Turn
from conversation.pipeline import TurnResult, run_turn
from conversation.pipeline.runner import check_input
from conversation.vocabulary import Status
from novaberg.api_errors import BusyError, ErrorSerializer
from novaberg.auth import request_user

logger = logging.getLogger(__name__)

# Streamed turns run in this many worker threads; at most STREAM_BACKLOG more wait for one.
# Past that a request is turned away (503) instead of starting one more thread per request.
STREAM_WORKERS = 8
STREAM_BACKLOG = 8
_stream_pool = ThreadPoolExecutor(max_workers=STREAM_WORKERS, thread_name_prefix="turn-stream")
_stream_slots = threading.BoundedSemaphore(STREAM_WORKERS + STREAM_BACKLOG)
BUSY_TEXT = (
    "Nova führt gerade zu viele Gespräche gleichzeitig. Versuch es bitte gleich noch einmal."
)


def _session_or_404(request: Request, session_id: int) -> Session:
    session = selectors.session_get(user=request_user(request), session_id=session_id)
    if session is None:
        # Another person's session and a missing one answer the same.
        raise Http404
    return session


class RawTextField(serializers.CharField):
    """A CharField that lets NUL and other control characters through to the pipeline, which
    refuses them with a named step and a German sentence instead of a bare 400."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            v for v in self.validators if type(v).__name__ != "ProhibitNullCharactersValidator"
        ]


class SessionIdSerializer(serializers.Serializer[Session]):
    id = serializers.IntegerField()


class SessionListSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    updated_at = serializers.DateTimeField()


class SessionCreateApi(APIView):
    @extend_schema(request=None, responses={201: SessionIdSerializer})
    def post(self, request: Request) -> Response:
        session = services.session_create(user=request_user(request))
        return Response(SessionIdSerializer(session).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: SessionListSerializer(many=True)})
    def get(self, request: Request) -> Response:
        rows = selectors.session_list(user=request_user(request))[:100]
        return Response(SessionListSerializer(rows, many=True).data)


class RecordSerializer(serializers.Serializer):
    """One record of a turn: its citation first; the retrieval's further fields follow."""

    path = serializers.CharField()
    lines = serializers.CharField()
    citation = serializers.CharField()
    channel = serializers.CharField(required=False)
    strength = serializers.CharField(required=False)
    size = serializers.IntegerField(required=False)
    eigentum = serializers.CharField(required=False)
    archived = serializers.BooleanField(required=False)
    summary = serializers.CharField(required=False)
    excerpt = serializers.CharField(required=False)
    root_id = serializers.IntegerField(required=False)
    cosine = serializers.FloatField(required=False, allow_null=True)


@extend_schema_field(RecordSerializer(many=True))
class RecordsField(serializers.Field):
    """Records as the turn stored them: ``path``, ``lines``, ``citation`` first, every further
    key kept (a record source may add its own)."""

    def to_representation(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        first = ("path", "lines", "citation")
        return [
            {
                **{key: record.get(key) for key in first},
                **{k: v for k, v in record.items() if k not in first},
            }
            for record in value
        ]


class TurnReplySerializer(serializers.Serializer[TurnResult]):
    turn_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=[s.value for s in Status])
    step = serializers.CharField(allow_blank=True)
    reply = serializers.CharField(allow_blank=True)
    question = serializers.CharField(allow_null=True)
    records = RecordsField()
    ttft_ms = serializers.IntegerField(allow_null=True)
    total_ms = serializers.IntegerField()


class MessageRefusedSerializer(serializers.Serializer[dict[str, str]]):
    detail = serializers.CharField(help_text="why, in German, for the person")
    step = serializers.CharField(help_text="kein_text | leer | zu_lang")


def _refused_message(data: object) -> tuple[str, str] | None:
    """(step, German detail) for a message the API refuses before anything is stored: no text,
    not a string, empty, or longer than NOVABERG_MAX_MESSAGE_CHARS (the pipeline's own rule).
    Control characters still reach the pipeline, which names them in the reply."""
    text = data.get("text") if hasattr(data, "get") else None
    if not isinstance(text, str):
        return "kein_text", "Die Nachricht braucht ein Feld „text“ mit Text."
    _, step, reason = check_input(text)
    if step in {"leer", "zu_lang"} and reason is not None:
        return step, reason
    return None


class MessageCreateApi(APIView):
    class InputSerializer(serializers.Serializer[dict[str, Any]]):
        # Empty and over-long texts are refused before this (400 {detail}); control characters
        # go on to the pipeline, which refuses them with a named step and a German sentence.
        text = RawTextField(allow_blank=True, trim_whitespace=False)

    @extend_schema(
        request=InputSerializer,
        parameters=[
            OpenApiParameter(
                "stream",
                bool,
                description="1: NDJSON stream of token lines, then one done line",
            )
        ],
        responses={200: TurnReplySerializer, 400: MessageRefusedSerializer, 503: ErrorSerializer},
    )
    def post(self, request: Request, session_id: int) -> Response | StreamingHttpResponse:
        """``?stream=1`` answers NDJSON: one ``{"type": "token", "text"}`` line per token, then
        one ``{"type": "done", ...}`` line with the same shape as the plain answer."""
        user = request_user(request)
        session = _session_or_404(request, session_id)
        refused = _refused_message(request.data)
        if refused is not None:
            step, detail = refused
            logger.info("message refused", extra={"outcome": "abgelehnt", "step": step})
            return Response({"detail": detail, "step": step}, status=status.HTTP_400_BAD_REQUEST)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["text"]
        if request.query_params.get("stream") in {"1", "true", "ja"}:
            response = StreamingHttpResponse(
                _stream_turn(user, session, text), content_type="application/x-ndjson"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return response
        result = run_turn(user=user, character=session.character, session=session, text=text)
        return Response(reply_payload(result))


def reply_payload(result: TurnResult) -> dict[str, Any]:
    """The DESIGN.md "Interfaces" shape of a finished turn (plus step and timings)."""
    return dict(TurnReplySerializer(result).data)


_END = object()


def _stream_turn(user: User, session: Session, text: str) -> Iterator[bytes]:
    """Runs the turn in the bounded stream pool (its own DB connection) and yields its tokens
    as they come. A client that goes away does not stop the turn: it finishes and is stored.
    Raises ``BusyError`` before anything runs when every worker and waiting place is taken."""
    if not _stream_slots.acquire(blocking=False):
        raise BusyError(BUSY_TEXT, step="ausgelastet")
    events: queue.Queue[object] = queue.Queue()

    def work() -> None:
        try:
            result = run_turn(
                user=user,
                character=session.character,
                session=session,
                text=text,
                on_token=lambda token: events.put({"type": "token", "text": token}),
            )
            events.put({"type": "done", **reply_payload(result)})
        except Exception:
            logger.exception("streamed turn crashed")
            events.put({"type": "error", "text": "Entschuldige, da ist etwas schiefgegangen."})
        finally:
            connection.close()
            _stream_slots.release()
            events.put(_END)

    _stream_pool.submit(work)
    return _events(events)


def _events(events: queue.Queue[object]) -> Iterator[bytes]:
    while (event := events.get()) is not _END:
        yield (json.dumps(event, ensure_ascii=False) + "\n").encode()


class PipelineLogSerializer(serializers.Serializer):
    node = serializers.CharField()
    outcome = serializers.CharField()
    ms = serializers.IntegerField()
    details = serializers.JSONField()


class TurnSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    reply = serializers.SerializerMethodField()
    status = serializers.CharField()
    ttft_ms = serializers.IntegerField(allow_null=True)
    pipeline = PipelineLogSerializer(many=True)

    def get_reply(self, turn: Turn) -> str:
        replies = list(turn.replies.all())
        return replies[-1].text if replies else ""


class TurnListApi(APIView):
    @extend_schema(responses={200: TurnSerializer(many=True)})
    def get(self, request: Request, session_id: int) -> Response:
        session = _session_or_404(request, session_id)
        turns = selectors.turn_list(user=request_user(request), session=session)
        return Response(TurnSerializer(turns, many=True).data)
