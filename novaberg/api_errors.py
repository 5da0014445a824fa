"""One ApplicationError family, mapped to API responses in one exception handler (HackSoft style).

Services raise these domain errors and know nothing of HTTP; ``exception_handler`` alone decides
the HTTP status, from the error's class. The answer body is always
``{"status": "fehler" | "abgelehnt", "step": <named step>, "reason": <German sentence>}``.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from rest_framework import serializers
from rest_framework import status as http
from rest_framework.exceptions import ParseError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from novaberg.parsers import RefusedJsonError


class ErrorStatus(StrEnum):
    """The ``status`` word of an error answer (DESIGN.md "Interfaces": a release outside the
    boundary answers ``{status: "abgelehnt", reason}``)."""

    FAILED = "fehler"
    # Turned down by a rule (the boundary, an existing release), not by a fault.
    REFUSED = "abgelehnt"


class ApplicationError(Exception):
    """A named failure the person should read: ``message`` is German, ``step`` is the name.

    Raised as it is, it is bad input (400)."""

    status: ErrorStatus = ErrorStatus.FAILED

    def __init__(
        self,
        message: str,
        *,
        step: str,
        status: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.step = step
        if status is not None:
            self.status = ErrorStatus(status)


class NotFoundError(ApplicationError):
    """The object is missing or another person's (both answer the same)."""


class ConflictError(ApplicationError):
    """The object is in a state that does not allow the action (an inactive root indexed)."""


class RefusedError(ApplicationError):
    """A rule turned the request down (already released, suspended, …)."""

    status = ErrorStatus.REFUSED


class ForbiddenError(RefusedError):
    """A rule of access turned it down: the path lies outside the person's boundary."""


class BusyError(ApplicationError):
    """Nothing is wrong with the request, but there is no room to run it now."""


# The one place where a domain error becomes an HTTP status; the first class in the error's
# MRO that is listed wins.
HTTP_STATUS: dict[type[ApplicationError], int] = {
    NotFoundError: http.HTTP_404_NOT_FOUND,
    ConflictError: http.HTTP_409_CONFLICT,
    ForbiddenError: http.HTTP_403_FORBIDDEN,
    BusyError: http.HTTP_503_SERVICE_UNAVAILABLE,
    RefusedError: http.HTTP_400_BAD_REQUEST,
    ApplicationError: http.HTTP_400_BAD_REQUEST,
}


class ErrorSerializer(serializers.Serializer[ApplicationError]):
    """The body of every ApplicationError answer, for the OpenAPI schema."""

    status = serializers.ChoiceField(choices=[s.value for s in ErrorStatus])
    step = serializers.CharField()
    reason = serializers.CharField(source="message")


def http_status_of(exc: ApplicationError) -> int:
    for cls in type(exc).__mro__:
        if cls in HTTP_STATUS:
            return HTTP_STATUS[cls]
    return http.HTTP_400_BAD_REQUEST


# DRF's parsers answer in English with the parser's own message ("JSON parse error - Expecting
# value: line 1 column 1 (char 0)"); the person reads one German sentence.
PARSE_ERROR_JSON = "Der Inhalt der Anfrage ist kein gültiges JSON."
PARSE_ERROR_OTHER = "Der Inhalt der Anfrage ließ sich nicht lesen."


_SURROGATE = re.compile("[\ud800-\udfff]")


def printable(value: Any) -> Any:
    """``value`` with every lone surrogate replaced by U+FFFD, in strings nested anywhere.

    An error message may repeat what was sent ("„…“ ist keine gültige Option."); a lone
    surrogate in it cannot be encoded as UTF-8, and the renderer would fail with a 500 instead
    of the 400. Nothing undecodable is repeated back."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(item) for item in value]
    return value


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        data = printable(ErrorSerializer(exc).data)
        return Response(data, status=http_status_of(exc))
    # The checked parser's refusals (too deep, a lone surrogate) already speak German.
    if isinstance(exc, ParseError) and not isinstance(exc, RefusedJsonError):
        is_json = str(exc.detail).startswith("JSON parse error")
        exc = ParseError(PARSE_ERROR_JSON if is_json else PARSE_ERROR_OTHER)
    response = drf_exception_handler(exc, context)
    if response is not None:
        response.data = printable(response.data)
    return response
