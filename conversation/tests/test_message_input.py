"""POST /api/sessions/{id}/messages/ refuses a message without usable text with 400 and a German
``detail`` before anything is stored (DESIGN.md Interfaces)."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from conversation.models import MemoryEntry, PipelineLog, Turn

pytestmark = pytest.mark.django_db

URL = "/api/sessions/{}/messages/"


def _new_session(api: APIClient) -> int:
    return int(api.post("/api/sessions/", {}, format="json").json()["id"])


def _nothing_stored(session_id: int) -> None:
    assert Turn.objects.filter(session_id=session_id).count() == 0
    assert PipelineLog.objects.count() == 0
    assert MemoryEntry.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "step"),
    [
        pytest.param({}, "kein_text", id="missing"),
        pytest.param({"text": None}, "kein_text", id="null"),
        pytest.param({"text": 42}, "kein_text", id="number"),
        pytest.param({"text": ["Hallo"]}, "kein_text", id="list"),
        pytest.param({"text": {"text": "Hallo"}}, "kein_text", id="object"),
        pytest.param({"text": True}, "kein_text", id="bool"),
        pytest.param({"text": ""}, "leer", id="empty"),
        pytest.param({"text": "  \n\t "}, "leer", id="whitespace"),
        pytest.param({"text": "x" * 2001}, "zu_lang", id="one-too-many"),
        pytest.param({"text": "a" * 50_000}, "zu_lang", id="50000"),
    ],
)
@pytest.mark.parametrize("stream", ["", "?stream=1"], ids=["plain", "stream"])
def test_bad_text_is_400_with_a_german_detail_and_nothing_stored(
    api: APIClient, body: dict[str, Any], step: str, stream: str
) -> None:
    session_id = _new_session(api)
    answer = api.post(URL.format(session_id) + stream, body, format="json")
    assert answer.status_code == 400
    payload = answer.json()
    assert payload["step"] == step
    detail = payload["detail"]
    assert isinstance(detail, str) and "Nachricht" in detail
    if step == "zu_lang":
        text = body["text"]
        assert f"{len(text)} Zeichen zu lang" in detail
        assert f"höchstens {settings.MAX_MESSAGE_CHARS}" in detail
    _nothing_stored(session_id)


def test_a_json_array_body_is_400(api: APIClient) -> None:
    session_id = _new_session(api)
    answer = api.post(URL.format(session_id), ["Hallo"], format="json")
    assert answer.status_code == 400 and answer.json()["step"] == "kein_text"
    _nothing_stored(session_id)


def test_the_longest_allowed_message_runs_a_turn(api: APIClient) -> None:
    session_id = _new_session(api)
    text = "Ich erzähle dir etwas. " + "x" * (settings.MAX_MESSAGE_CHARS - 23)
    assert len(text) == settings.MAX_MESSAGE_CHARS
    answer = api.post(URL.format(session_id), {"text": text}, format="json")
    assert answer.status_code == 200
    assert Turn.objects.filter(session_id=session_id, role="user").count() == 1


def test_another_persons_session_stays_404_even_with_bad_text(
    api: APIClient, other_api: APIClient
) -> None:
    session_id = _new_session(api)
    assert other_api.post(URL.format(session_id), {"text": ""}, format="json").status_code == 404
    _nothing_stored(session_id)


def test_the_schema_documents_the_400(api: APIClient) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    responses = schema["paths"]["/api/sessions/{session_id}/messages/"]["post"]["responses"]
    assert "400" in responses
    ref = responses["400"]["content"]["application/json"]["schema"]["$ref"]
    components = schema["components"]["schemas"]
    # Every 4xx body is one of the API's error shapes (novaberg/openapi.py); {detail, step} is
    # the one of a refused message.
    shapes = [
        components[part["$ref"].rsplit("/", 1)[1]]
        for part in components[ref.rsplit("/", 1)[1]]["anyOf"]
    ]
    assert {"detail", "step"} in [set(shape.get("properties", {})) for shape in shapes]
