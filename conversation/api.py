"""REST endpoints of the conversation (DESIGN.md "Interfaces")."""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Iterator
from typing import Any

from django.db import connection
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation import selectors, services
from conversation.models import Session, Turn
from conversation.pipeline import TurnResult, run_turn
from conversation.pipeline.runner import check_input

logger = logging.getLogger(__name__)


def _session_or_404(request: Request, session_id: int) -> Session:
    session = selectors.session_get(user=request.user, session_id=session_id)
    if session is None:
        # Another person's session and a missing one answer the same.
        raise Http404
    return session


class RawTextField(serializers.CharField):
    """A CharField that lets NUL and other control characters through to the pipeline, which
    refuses them with a named step and a German sentence instead of a bare 400."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.validators = [
            v for v in self.validators if type(v).__name__ != "ProhibitNullCharactersValidator"
        ]


class SessionCreateApi(APIView):
    class SessionIdSerializer(serializers.Serializer):
        id = serializers.IntegerField()

    @extend_schema(request=None, responses={201: SessionIdSerializer})
    def post(self, request: Request) -> Response:
        session = services.session_create(user=request.user)
        return Response({"id": session.pk}, status=status.HTTP_201_CREATED)

    class SessionListSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        title = serializers.CharField()
        updated_at = serializers.DateTimeField()

    @extend_schema(responses={200: SessionListSerializer(many=True)})
    def get(self, request: Request) -> Response:
        rows = selectors.session_list(user=request.user)[:100]
        return Response(self.SessionListSerializer(rows, many=True).data)


class MessageRefusedSerializer(serializers.Serializer):
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
    class InputSerializer(serializers.Serializer):
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
        responses={
            200: inline_serializer(
                "TurnReply",
                {
                    "turn_id": serializers.IntegerField(),
                    "status": serializers.CharField(),
                    "reply": serializers.CharField(),
                    "question": serializers.CharField(allow_null=True),
                    "records": serializers.ListField(child=serializers.DictField()),
                },
            ),
            400: MessageRefusedSerializer,
        },
    )
    def post(self, request: Request, session_id: int) -> Response | StreamingHttpResponse:
        """``?stream=1`` answers NDJSON: one ``{"type": "token", "text"}`` line per token, then
        one ``{"type": "done", ...}`` line with the same shape as the plain answer."""
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
                _stream_turn(request.user, session, text), content_type="application/x-ndjson"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return response
        result = run_turn(
            user=request.user, character=session.character, session=session, text=text
        )
        return Response(reply_payload(result))


def reply_payload(result: TurnResult) -> dict[str, Any]:
    """The DESIGN.md "Interfaces" shape of a finished turn (plus step and timings)."""
    return {
        "turn_id": result.turn_id,
        "status": result.status,
        "step": result.step,
        "reply": result.reply,
        "question": result.question,
        "records": [
            {
                "path": r.get("path"),
                "lines": r.get("lines"),
                "citation": r.get("citation"),
                **{k: v for k, v in r.items() if k not in {"path", "lines", "citation"}},
            }
            for r in result.records
        ],
        "ttft_ms": result.ttft_ms,
        "total_ms": result.total_ms,
    }


_END = object()


def _stream_turn(user: Any, session: Session, text: str) -> Iterator[bytes]:
    """Runs the turn in a worker thread (its own DB connection) and yields its tokens as they
    come. A client that goes away does not stop the turn: it finishes and is stored."""
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
            events.put(_END)

    threading.Thread(target=work, name=f"turn-stream-{session.pk}", daemon=True).start()
    while (event := events.get()) is not _END:
        yield (json.dumps(event, ensure_ascii=False) + "\n").encode()


class PipelineLogSerializer(serializers.Serializer):
    node = serializers.CharField()
    outcome = serializers.CharField()
    ms = serializers.IntegerField()
    details = serializers.JSONField()


class TurnListApi(APIView):
    class TurnSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        text = serializers.CharField()
        reply = serializers.SerializerMethodField()
        status = serializers.CharField()
        ttft_ms = serializers.IntegerField(allow_null=True)
        pipeline = serializers.SerializerMethodField()

        def get_reply(self, turn: Turn) -> str:
            replies = list(turn.replies.all())
            return replies[-1].text if replies else ""

        @extend_schema_field(PipelineLogSerializer(many=True))
        def get_pipeline(self, turn: Turn) -> list[dict[str, object]]:
            return PipelineLogSerializer(turn.pipeline.all(), many=True).data

    @extend_schema(responses={200: TurnSerializer(many=True)})
    def get(self, request: Request, session_id: int) -> Response:
        session = _session_or_404(request, session_id)
        turns = selectors.turn_list(user=request.user, session=session)
        return Response(self.TurnSerializer(turns, many=True).data)
