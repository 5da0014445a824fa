"""One ApplicationError, mapped to API responses in one exception handler (HackSoft style)."""

from __future__ import annotations

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """A named failure the person should read: ``message`` is German, ``step`` is the name."""

    def __init__(
        self, message: str, *, step: str, status: str = "fehler", http_status: int = 400
    ) -> None:
        super().__init__(message)
        self.message = message
        self.step = step
        self.status = status
        self.http_status = http_status


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        return Response(
            {"status": exc.status, "step": exc.step, "reason": exc.message},
            status=exc.http_status,
        )
    return drf_exception_handler(exc, context)
