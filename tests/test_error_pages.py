"""Django's own error answers in German, in the app's design; JSON parse errors of the API in
German; a path trick on /static/ is a 400, not a 500.

This module is also the URLconf of the tests that need a view that fails (``pytest.mark.urls``):
the app's routes plus two views that raise, with the app's error handlers.
"""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import HttpCommunicator
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.test import Client, RequestFactory
from django.urls import get_resolver, path

from novaberg import urls as app_urls
from novaberg.api_errors import PARSE_ERROR_JSON


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("kaputt")


def _forbidden(request: HttpRequest) -> HttpResponse:
    raise PermissionDenied


urlpatterns = [
    path("kaputt/", _boom),
    path("verboten/", _forbidden),
    path("api/kaputt/", _boom),
    *app_urls.urlpatterns,
]
handler400 = app_urls.handler400
handler403 = app_urls.handler403
handler404 = app_urls.handler404
handler500 = app_urls.handler500


HOST = [(b"host", b"127.0.0.1")]


def assert_app_page(body: str) -> None:
    # The app's design: base.html's header and stylesheet, in German.
    assert '<html lang="de">' in body
    assert 'class="brand"' in body and "novaberg.css" in body
    assert "Not Found" not in body and "Server Error" not in body and "Forbidden" not in body


@pytest.mark.django_db
def test_an_unknown_page_answers_404_in_german_in_the_apps_design(client: Client) -> None:
    answer = client.get("/gibt-es-nicht/")
    assert answer.status_code == 404
    body = answer.content.decode()
    assert_app_page(body)
    assert "Diese Seite gibt es nicht." in body


@pytest.mark.django_db
def test_an_unknown_api_path_answers_404_as_german_json(client: Client) -> None:
    answer = client.get("/api/gibt-es-nicht/")
    assert answer.status_code == 404
    assert answer.json() == {"detail": "Diese Seite gibt es nicht."}


@pytest.mark.django_db
@pytest.mark.urls("tests.test_error_pages")
def test_a_forbidden_page_answers_403_in_german(client: Client) -> None:
    answer = client.get("/verboten/")
    assert answer.status_code == 403
    body = answer.content.decode()
    assert_app_page(body)
    assert "Dafür fehlt dir die Berechtigung." in body


@pytest.mark.django_db
def test_a_failed_csrf_check_answers_403_in_german() -> None:
    answer = Client(enforce_csrf_checks=True).post("/login/", {"username": "a", "password": "b"})
    assert answer.status_code == 403
    body = answer.content.decode()
    assert_app_page(body)
    assert "Sicherheitsprüfung" in body and "CSRF verification failed" not in body


@pytest.mark.django_db
@pytest.mark.urls("tests.test_error_pages")
def test_a_crash_answers_500_in_german_in_the_apps_design() -> None:
    answer = Client(raise_request_exception=False).get("/kaputt/")
    assert answer.status_code == 500
    body = answer.content.decode()
    assert_app_page(body)
    assert "Da ist etwas schiefgegangen" in body


@pytest.mark.django_db
@pytest.mark.urls("tests.test_error_pages")
def test_a_crash_under_api_answers_500_as_german_json() -> None:
    answer = Client(raise_request_exception=False).get("/api/kaputt/")
    assert answer.status_code == 500
    assert answer.json()["detail"].startswith("Da ist auf unserer Seite etwas schiefgegangen")


def test_the_500_page_needs_no_database_and_no_request_context() -> None:
    # No django_db mark: any query here raises. The handler is the one Django resolves.
    handler = get_resolver().resolve_error_handler(500)
    request = RequestFactory().get("/")  # no session, no user: middleware never ran
    answer = handler(request)
    assert answer.status_code == 500
    assert_app_page(answer.content.decode())


@pytest.mark.django_db
def test_a_json_parse_error_of_the_api_answers_in_german(api: Any, session: Any) -> None:
    answer = api.post(
        f"/api/sessions/{session.pk}/messages/", data="{kaputt", content_type="application/json"
    )
    assert answer.status_code == 400
    assert answer.json() == {"detail": PARSE_ERROR_JSON}


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.parametrize(
    "raw_path",
    [
        pytest.param("/static/..%2f..%2fsecret_key", id="encoded-slashes"),
        pytest.param("/static/../../secret_key", id="plain-dots"),
        pytest.param("/static/..%2f..%2f..%2fetc%2fpasswd", id="etc-passwd"),
    ],
)
async def test_a_path_trick_on_static_answers_400_not_500(raw_path: str) -> None:
    from novaberg.asgi import application

    # HttpCommunicator decodes the path as daphne does (%2f becomes /).
    answer = await HttpCommunicator(application, "GET", raw_path, headers=HOST).get_response(
        timeout=10
    )
    assert answer["status"] == 400
    body = answer["body"].decode()
    assert "Diese Anfrage kann ich nicht bearbeiten" in body
    assert "root:" not in body and "SECRET" not in body


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_static_file_is_still_served() -> None:
    from novaberg.asgi import application

    comm = HttpCommunicator(application, "GET", "/static/chat.js", headers=HOST)
    await comm.send_input({"type": "http.request", "body": b""})
    start = await comm.receive_output(10)
    body = b""
    while True:
        chunk = await comm.receive_output(10)
        body += chunk.get("body", b"")
        if not chunk.get("more_body"):
            break
    assert start["status"] == 200 and b"WebSocket" in body
