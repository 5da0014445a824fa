"""REST endpoints of the conversation (DESIGN.md "Interfaces"). Thin: parse, authorise by the
requesting person, call one service, serialise with a declared serializer."""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.handlers.asgi import ASGIRequest
from django.db import connection
from django.http import Http404, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation import address, selectors, services
from conversation.models import Session, Turn
from conversation.pipeline import TurnResult, run_turn
from conversation.pipeline.runner import check_input
from conversation.pipeline.state import STOP_DISCONNECTED, TurnCancel
from conversation.vocabulary import Status
from novaberg import fields as strict
from novaberg.api_errors import ApplicationError, BusyError, ErrorSerializer, NotFoundError
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
    title = serializers.SerializerMethodField(
        help_text="her own title, else the automatic one from her first message"
    )
    updated_at = serializers.DateTimeField()
    # Additive: whether the title is the automatic one, and the search hit (with ?q=).
    title_auto = serializers.SerializerMethodField()
    match = serializers.SerializerMethodField(help_text="with ?q=: an excerpt around the hit")

    def get_title(self, session: Session) -> str:
        return selectors.session_title(session)

    def get_title_auto(self, session: Session) -> bool:
        return not session.title.strip()

    def get_match(self, session: Session) -> str:
        query = self.context.get("query", "")
        return selectors.match_snippet(getattr(session, "match_text", None), query)


SESSION_LIST_LIMIT = 100
SEARCH_MAX_CHARS = 200


class SessionCreateApi(APIView):
    @extend_schema(request=None, responses={201: SessionIdSerializer})
    def post(self, request: Request) -> Response:
        session = services.session_create(user=request_user(request))
        return Response(SessionIdSerializer(session).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "q",
                {"type": "string", "maxLength": SEARCH_MAX_CHARS, "pattern": "^[^\\u0000]*$"},
                required=False,
                description="only chats whose title or text has it",
            )
        ],
        responses={200: SessionListSerializer(many=True), 400: ErrorSerializer},
    )
    def get(self, request: Request) -> Response:
        query = (request.query_params.get("q") or "").strip()
        if "\x00" in query:
            raise ApplicationError(
                "Die Suche darf kein Nullzeichen (NUL) enthalten.", step="anfrage_unlesbar"
            )
        if len(query) > SEARCH_MAX_CHARS:
            raise ApplicationError(
                f"Die Suche darf höchstens {SEARCH_MAX_CHARS} Zeichen lang sein.",
                step="anfrage_zu_lang",
            )
        rows = selectors.session_list(user=request_user(request), query=query)
        return Response(
            SessionListSerializer(
                rows[:SESSION_LIST_LIMIT], many=True, context={"query": query}
            ).data
        )


# Control characters a title may not hold (services.session_rename): those that are not
# whitespace, which the title's spaces are folded from.
TITLE_PATTERN = "^[^\\u0000-\\u0008\\u000e-\\u001b\\u007f]*$"


@extend_schema_field(
    {"type": "string", "maxLength": services.TITLE_MAX_CHARS, "pattern": TITLE_PATTERN}
)
class TitleField(strict.StrictCharField):
    pass


class SessionRenameSerializer(serializers.Serializer[dict[str, str]]):
    title = TitleField(
        allow_blank=True,
        trim_whitespace=False,
        max_length=services.TITLE_MAX_CHARS,
        help_text="empty: the automatic title from her first message again",
    )


class SessionDetailApi(APIView):
    """One chat of the person: read, rename (``PATCH {title}``), delete."""

    @extend_schema(responses={200: SessionListSerializer, 404: ErrorSerializer})
    def get(self, request: Request, session_id: int) -> Response:
        session = selectors.session_get(user=request_user(request), session_id=session_id)
        if session is None:
            raise NotFoundError("Dieses Gespräch gibt es nicht.", step="gespraech_unbekannt")
        return Response(SessionListSerializer(session).data)

    @extend_schema(
        request=SessionRenameSerializer,
        responses={200: SessionListSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def patch(self, request: Request, session_id: int) -> Response:
        data = SessionRenameSerializer(data=request.data)
        if not data.is_valid():
            given = request.data.get("title") if hasattr(request.data, "get") else None
            if given is None:
                raise ApplicationError("Der neue Titel fehlt (Feld „title“).", step="kein_titel")
            if isinstance(given, str) and len(given) > services.TITLE_MAX_CHARS:
                raise ApplicationError(
                    f"Der Titel darf höchstens {services.TITLE_MAX_CHARS} Zeichen lang sein.",
                    step="titel_zu_lang",
                )
            raise ApplicationError(
                "Der Titel muss Text ohne Steuerzeichen sein.", step="titel_unlesbar"
            )
        session = services.session_rename(
            user=request_user(request), session_id=session_id, title=data.validated_data["title"]
        )
        return Response(SessionListSerializer(session).data)

    @extend_schema(request=None, responses={204: None, 404: ErrorSerializer})
    def delete(self, request: Request, session_id: int) -> Response:
        services.session_delete(user=request_user(request), session_id=session_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


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


class TurnNoteSerializer(serializers.Serializer[dict[str, Any]]):
    """The tribunal's note under the reply (seed 000 §8.3): a broken rule, an invented source."""

    text = serializers.CharField(help_text="the note, in German, as shown under the reply")
    verstoesse = serializers.ListField(child=serializers.CharField())
    zitate_ohne_beleg = serializers.ListField(child=serializers.CharField())


class TurnReplySerializer(serializers.Serializer[TurnResult]):
    turn_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=[s.value for s in Status])
    step = serializers.CharField(allow_blank=True)
    reply = serializers.CharField(allow_blank=True)
    question = serializers.CharField(allow_null=True)
    records = RecordsField()
    ttft_ms = serializers.IntegerField(allow_null=True)
    total_ms = serializers.IntegerField()
    # Additive: null unless the tribunal found something after the reply.
    note = TurnNoteSerializer(allow_null=True, required=False)


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


# ``?stream=``: these words ask for the NDJSON stream, these for the plain answer (as does no
# ``stream`` at all); any other value, the empty one included, is refused (400), so a typo
# never silently picks one.
STREAM_ON = frozenset({"1", "true", "ja"})
STREAM_OFF = frozenset({"0", "false", "nein"})


@extend_schema_field(
    {
        "type": "string",
        "pattern": "\\S",
        "maxLength": settings.MAX_MESSAGE_CHARS,
        "description": "at least one character that is not a space; control characters are "
        "answered by the pipeline (status fehler, step steuerzeichen)",
    }
)
class MessageTextField(RawTextField):
    pass


class MessageCreateApi(APIView):
    class InputSerializer(serializers.Serializer[dict[str, Any]]):
        # Empty and over-long texts are refused before this (400 {detail}); control characters
        # go on to the pipeline, which refuses them with a named step and a German sentence.
        text = MessageTextField(allow_blank=True, trim_whitespace=False)

    @extend_schema(
        request=InputSerializer,
        parameters=[
            OpenApiParameter(
                "stream",
                str,
                enum=sorted(STREAM_ON | STREAM_OFF),
                description="1: NDJSON stream of token lines, then one done line",
            )
        ],
        responses={
            (200, "application/json"): TurnReplySerializer,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            400: MessageRefusedSerializer,
            503: ErrorSerializer,
        },
    )
    def post(self, request: Request, session_id: int) -> Response | StreamingHttpResponse:
        """``?stream=1`` answers NDJSON: one ``{"type": "token", "text"}`` line per token, then
        one ``{"type": "done", ...}`` line with the same shape as the plain answer."""
        user = request_user(request)
        session = _session_or_404(request, session_id)
        stream = request.query_params.get("stream", "0").lower()
        if stream not in STREAM_ON | STREAM_OFF:
            raise ApplicationError(
                "stream muss 1 oder 0 (true oder false) sein.", step="stream_unlesbar"
            )
        refused = _refused_message(request.data)
        if refused is not None:
            step, detail = refused
            detail = address.for_person(detail, user=user)  # "Sieze mich": the detail says Sie
            logger.info("message refused", extra={"outcome": "abgelehnt", "step": step})
            return Response({"detail": detail, "step": step}, status=status.HTTP_400_BAD_REQUEST)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["text"]
        if stream in STREAM_ON:
            # Under ASGI (daphne) the lines go out as an async iterator: Django would read a
            # sync one to its end before sending a byte, and a client gone would go unnoticed.
            asgi = isinstance(request._request, ASGIRequest)
            response = StreamingHttpResponse(
                _stream_turn(user, session, text, asgi=asgi), content_type="application/x-ndjson"
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
STREAM_POLL_S = 0.02


def _stream_turn(
    user: User, session: Session, text: str, *, asgi: bool = False
) -> Iterator[bytes] | AsyncIterator[bytes]:
    """Runs the turn in the bounded stream pool (its own DB connection) and yields its tokens
    as they come. A client that goes away cancels the turn (its model call is closed
    upstream; the turn is stored ``abgebrochen`` with what had been said), as far as the
    server tells: daphne does, a WSGI server when its write fails. Raises ``BusyError``
    before anything runs when every worker and waiting place is taken."""
    if not _stream_slots.acquire(blocking=False):
        raise BusyError(BUSY_TEXT, step="ausgelastet")
    events: queue.Queue[object] = queue.Queue()
    cancel = TurnCancel()

    def work() -> None:
        try:
            result = run_turn(
                user=user,
                character=session.character,
                session=session,
                text=text,
                on_token=lambda token: events.put({"type": "token", "text": token}),
                cancel=cancel,
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
    return _async_events(events, cancel) if asgi else _events(events, cancel)


def _line(event: object) -> bytes:
    return (json.dumps(event, ensure_ascii=False) + "\n").encode()


def _events(events: queue.Queue[object], cancel: TurnCancel) -> Iterator[bytes]:
    ended = False
    try:
        while (event := events.get()) is not _END:
            yield _line(event)
        ended = True
    finally:
        if not ended:  # the server closed the iterator early: the client is gone
            cancel.stop(STOP_DISCONNECTED)


async def _async_events(events: queue.Queue[object], cancel: TurnCancel) -> AsyncIterator[bytes]:
    ended = False
    try:
        # Polled, not a blocking get in a thread: no thread waits per stream, and when the
        # client leaves Django cancels this task at once (the turn is stopped below).
        while True:
            try:
                event = events.get_nowait()
            except queue.Empty:
                await asyncio.sleep(STREAM_POLL_S)
                continue
            if event is _END:
                break
            yield _line(event)
        ended = True
    finally:
        if not ended:
            logger.info(
                "streamed turn: client gone", extra={"outcome": "abgebrochen", "step": "getrennt"}
            )
            cancel.stop(STOP_DISCONNECTED)


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
