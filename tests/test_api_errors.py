"""One ApplicationError family; one handler decides the HTTP status from the error's class."""

from __future__ import annotations

import pytest
from rest_framework.exceptions import NotFound

from novaberg.api_errors import (
    ApplicationError,
    BusyError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RefusedError,
    exception_handler,
)


@pytest.mark.parametrize(
    ("error", "http", "status"),
    [
        pytest.param(ApplicationError, 400, "fehler", id="bad-input"),
        pytest.param(NotFoundError, 404, "fehler", id="not-found"),
        pytest.param(ConflictError, 409, "fehler", id="conflict"),
        pytest.param(RefusedError, 400, "abgelehnt", id="refused"),
        pytest.param(ForbiddenError, 403, "abgelehnt", id="forbidden"),
        pytest.param(BusyError, 503, "fehler", id="busy"),
    ],
)
def test_the_handler_maps_each_error_class(
    error: type[ApplicationError], http: int, status: str
) -> None:
    answer = exception_handler(error("Das geht so nicht.", step="ein_schritt"), {})
    assert answer is not None
    assert answer.status_code == http
    assert answer.data == {"status": status, "step": "ein_schritt", "reason": "Das geht so nicht."}


def test_other_exceptions_stay_with_drf() -> None:
    answer = exception_handler(NotFound(), {})
    assert answer is not None and answer.status_code == 404 and "detail" in answer.data
