"""The HTTP skeleton of DESIGN.md "Interfaces", through the real HTTP stack."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from conversation.models import PipelineLog, Session, Turn

pytestmark = pytest.mark.django_db


def test_token_login_and_session_create(user: Any) -> None:
    client = APIClient()
    answer = client.post(
        "/api/auth/token/", {"username": "anna", "password": "geheim123"}, format="json"
    )
    assert answer.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Token {answer.json()['token']}")
    created = client.post("/api/sessions/", {}, format="json")
    assert created.status_code == 201
    assert Session.objects.get(pk=created.json()["id"]).user == user


def test_wrong_password_gets_no_token(user: Any) -> None:
    answer = APIClient().post(
        "/api/auth/token/", {"username": "anna", "password": "falsch"}, format="json"
    )
    assert answer.status_code == 400
    assert "token" not in answer.json()


def test_without_login_the_api_refuses() -> None:
    assert APIClient().post("/api/sessions/", {}, format="json").status_code == 401


def test_message_runs_a_turn_and_returns_the_interface_shape(api: APIClient) -> None:
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    answer = api.post(
        f"/api/sessions/{session_id}/messages/", {"text": "Hallo Nova"}, format="json"
    )
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) >= {"turn_id", "status", "reply", "question", "records"}
    assert body["status"] == "abgeschlossen"
    assert body["reply"]
    assert body["question"] is None and body["records"] == []
    turn = Turn.objects.get(pk=body["turn_id"])
    assert turn.text == "Hallo Nova" and turn.role == "user"
    nodes = list(PipelineLog.objects.filter(turn=turn).values_list("node", flat=True))
    assert nodes[0] == "pending" and nodes[-1] == "gedaechtnis"
    assert "composer" in nodes and nodes.index("composer") < nodes.index("responder")


def test_another_persons_session_answers_404(api: APIClient, other_api: APIClient) -> None:
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    stolen = other_api.post(
        f"/api/sessions/{session_id}/messages/", {"text": "Hallo"}, format="json"
    )
    assert stolen.status_code == 404
    assert other_api.get(f"/api/sessions/{session_id}/turns/").status_code == 404
    assert not Turn.objects.filter(session_id=session_id).exists()
    assert api.get("/api/sessions/999999/turns/").status_code == 404


def test_turn_list_shows_pipeline_with_a_constant_number_of_queries(api: APIClient) -> None:
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    api.post(f"/api/sessions/{session_id}/messages/", {"text": "Eins"}, format="json")
    with CaptureQueriesContext(connection) as one:
        first = api.get(f"/api/sessions/{session_id}/turns/")
    for text in ("Zwei", "Drei", "Vier"):
        api.post(f"/api/sessions/{session_id}/messages/", {"text": text}, format="json")
    with CaptureQueriesContext(connection) as four:
        listed = api.get(f"/api/sessions/{session_id}/turns/")
    assert first.status_code == listed.status_code == 200
    turns = listed.json()
    assert [t["text"] for t in turns] == ["Eins", "Zwei", "Drei", "Vier"]
    assert all(t["reply"] and t["status"] == "abgeschlossen" for t in turns)
    assert {p["node"] for p in turns[0]["pipeline"]} >= {"pending", "router", "responder"}
    assert all(isinstance(p["ms"], int) and p["outcome"] for p in turns[0]["pipeline"])
    # N+1 guard: four turns cost as many queries as one.
    assert len(four.captured_queries) == len(one.captured_queries)


@pytest.mark.parametrize(
    ("text", "step"),
    [
        # Empty and over-long texts never reach the pipeline: 400 (conversation/tests/
        # test_message_input.py). Control characters are refused by the pipeline, named.
        pytest.param("Hallo\x00Welt", "steuerzeichen", id="nul-byte"),
        pytest.param("Hallo\x1b[31m", "steuerzeichen", id="escape-sequence"),
    ],
)
def test_bad_input_gets_a_named_status_and_a_german_sentence(
    api: APIClient, text: str, step: str
) -> None:
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    body = api.post(f"/api/sessions/{session_id}/messages/", {"text": text}, format="json").json()
    assert body["status"] == "fehler"
    assert body["step"] == step
    assert body["reply"] and ("Nachricht" in body["reply"])
    # Nothing of the refused input reached the pipeline nodes.
    assert not PipelineLog.objects.filter(turn_id=body["turn_id"]).exists()


def test_openapi_schema_lists_the_interfaces(api: APIClient) -> None:
    answer = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert answer.status_code == 200
    paths = answer.json()["paths"]
    for path in (
        "/api/auth/token/",
        "/api/sessions/",
        "/api/sessions/{session_id}/messages/",
        "/api/sessions/{session_id}/turns/",
    ):
        assert path in paths


def test_request_id_is_echoed(api: APIClient) -> None:
    answer = api.post("/api/sessions/", {}, format="json", HTTP_X_REQUEST_ID="abc123")
    assert answer["X-Request-ID"] == "abc123"


def test_a_50000_character_message_is_refused_with_a_reason(api: APIClient) -> None:
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    answer = api.post(
        f"/api/sessions/{session_id}/messages/", {"text": "a" * 50_000}, format="json"
    )
    assert answer.status_code == 400 and answer.json()["step"] == "zu_lang"
    detail = answer.json()["detail"]
    assert "50000 Zeichen zu lang" in detail and "höchstens 2000" in detail
    assert not Turn.objects.filter(session_id=session_id).exists()


# Transactional (the stream runs in a pool thread with its own connection); Nova comes back after
# a flush through tests/fixtures.py's _ensure_nova. serialized_rollback would reload the content
# types that a preceding transactional test's flush already recreated (duplicate key).
@pytest.mark.django_db(transaction=True)
def test_streaming_variant_sends_tokens_then_the_finished_reply(user: Any) -> None:
    from tests.fixtures import token_client

    api = token_client(user)
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    answer = api.post(
        f"/api/sessions/{session_id}/messages/?stream=1", {"text": "Hallo Nova"}, format="json"
    )
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in b"".join(answer.streaming_content).splitlines()]
    kinds = [line["type"] for line in lines]
    assert kinds[-1] == "done" and set(kinds[:-1]) == {"token"} and len(kinds) > 2
    done = lines[-1]
    assert set(done) >= {"turn_id", "status", "reply", "question", "records"}
    assert "".join(line["text"] for line in lines[:-1]) == done["reply"]
    assert Turn.objects.get(pk=done["turn_id"]).status == "abgeschlossen"


def test_html_in_a_message_is_escaped_on_the_chat_page_and_in_the_inspector(
    api: APIClient, user: Any
) -> None:
    from django.test import Client

    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    evil = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    turn_id = api.post(
        f"/api/sessions/{session_id}/messages/", {"text": evil}, format="json"
    ).json()["turn_id"]
    browser = Client()
    browser.force_login(user)
    for url in (f"/chat/{session_id}/", f"/turns/{turn_id}/"):
        page = browser.get(url).content.decode()
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page, url
        assert "<script>alert" not in page and "<img src=x" not in page, url


def test_turn_inspector_shows_nodes_prompts_and_times_to_its_owner_only(
    api: APIClient, user: Any, other_user: Any
) -> None:
    from django.test import Client

    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    turn_id = api.post(
        f"/api/sessions/{session_id}/messages/", {"text": "Mein Hund heißt Bello."}, format="json"
    ).json()["turn_id"]
    owner = Client()
    owner.force_login(user)
    page = owner.get(f"/turns/{turn_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    for node in ("enricher", "composer", "responder", "tribunal", "gedaechtnis"):
        assert f'data-node="{node}"' in html
    assert html.count('class="wf-bar') == PipelineLog.objects.filter(turn_id=turn_id).count()
    assert "[VERFASSER]" in html and "[IDENTITAET]" in html  # the exact prompts
    assert "Erstes Token" in html and " ms" in html
    stranger = Client()
    stranger.force_login(other_user)
    assert stranger.get(f"/turns/{turn_id}/").status_code == 404
    assert owner.get("/turns/999999/").status_code == 404


def test_chat_page_shows_offline_mode_and_the_navigation(user: Any) -> None:
    from django.test import Client

    browser = Client()
    assert browser.get("/").status_code == 302  # login first
    browser.force_login(user)
    page = browser.get("/", follow=True).content.decode()
    assert "Offline-Modus" in page
    assert 'href="/roots/"' in page and ">Chat<" in page
    assert ">Admin<" not in page  # anna is not staff


@pytest.mark.django_db(transaction=True)
def test_streamed_turns_run_in_a_bounded_pool_and_a_full_one_says_so(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conversation import api as conversation_api
    from tests.fixtures import token_client

    api = token_client(user)
    session_id = api.post("/api/sessions/", {}, format="json").json()["id"]
    url = f"/api/sessions/{session_id}/messages/?stream=1"
    release = threading.Event()
    real = conversation_api.run_turn

    def held(**kwargs: Any) -> Any:
        release.wait(10)
        return real(**kwargs)

    monkeypatch.setattr(conversation_api, "run_turn", held)
    monkeypatch.setattr(conversation_api, "_stream_slots", threading.BoundedSemaphore(1))

    first = api.post(url, {"text": "Erste Nachricht"}, format="json")
    assert first.status_code == 200
    busy = api.post(url, {"text": "Zweite Nachricht"}, format="json")
    assert busy.status_code == 503
    assert busy.json() == {
        "status": "fehler",
        "step": "ausgelastet",
        "reason": conversation_api.BUSY_TEXT,
    }
    release.set()
    lines = [json.loads(line) for line in b"".join(first.streaming_content).splitlines()]
    assert lines[-1]["type"] == "done"
    # The finished turn gave its place back.
    third = api.post(url, {"text": "Dritte Nachricht"}, format="json")
    assert third.status_code == 200
    assert json.loads(b"".join(third.streaming_content).splitlines()[-1])["type"] == "done"
    stored = Turn.objects.filter(session_id=session_id, role=Turn.Role.USER)
    assert [t.text for t in stored.order_by("id")] == ["Erste Nachricht", "Dritte Nachricht"]
