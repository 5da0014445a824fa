"""Structured logging: one JSON object per line, with the request id / turn id of the current
context on every line (contextvars, so it follows threads started with copy_context and async
tasks)."""

from __future__ import annotations

import contextvars
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from django.http import HttpRequest, HttpResponse

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)
turn_id_var: contextvars.ContextVar[int | None] = contextvars.ContextVar("turn_id", default=None)

_STANDARD_ATTRS = set(logging.LogRecord("x", 0, "x", 0, "x", None, None).__dict__.keys()) | {
    "message",
    "asctime",
    "request_id",
    "turn_id",
}


class ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.turn_id = turn_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        turn_id = getattr(record, "turn_id", None)
        if request_id:
            payload["request_id"] = request_id
        if turn_id:
            payload["turn_id"] = turn_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, ensure_ascii=False, default=str)


@contextmanager
def turn_context(turn_id: int) -> Iterator[None]:
    token = turn_id_var.set(turn_id)
    try:
        yield
    finally:
        turn_id_var.reset(token)


class RequestIdMiddleware:
    """Takes X-Request-ID from the client or makes one; echoes it in the response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        given = request.headers.get("X-Request-ID", "")
        rid = given if given.isascii() and 0 < len(given) <= 64 else uuid.uuid4().hex[:16]
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-ID"] = rid
        return response
