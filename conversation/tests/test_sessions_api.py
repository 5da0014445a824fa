"""Chat management over the API: the automatic title from the first message, rename, delete and
search, each scoped to the requesting person (issue 15, "Chat management")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from conversation.models import MemoryEntry, Session, Turn
from conversation.selectors import auto_title

pytestmark = pytest.mark.django_db


def _chat(api: APIClient, *texts: str) -> int:
    session_id: int = api.post("/api/sessions/", {}, format="json").json()["id"]
    for text in texts:
        answer = api.post(f"/api/sessions/{session_id}/messages/", {"text": text}, format="json")
        assert answer.status_code == 200
    return session_id


def _listed(api: APIClient, query: str = "") -> list[dict[str, Any]]:
    answer = api.get("/api/sessions/", {"q": query} if query else {})
    assert answer.status_code == 200
    rows: list[dict[str, Any]] = answer.json()
    return rows


@pytest.mark.parametrize(
    ("first", "title"),
    [
        ("Hallo Nova", "Hallo Nova"),
        ("  Was   steht\nin meinen Notizen?  ", "Was steht in meinen Notizen?"),
        (
            "Wann kommt der Architekt Brenner zur Baustelle am Lindenweg und was bringt er mit?",
            "Wann kommt der Architekt Brenner zur Baustelle …",
        ),
        ("Donaudampfschifffahrtsgesellschaftskapitänsmützenabzeichenhersteller", None),
    ],
    ids=["short", "whitespace", "cut-at-word", "one-long-word"],
)
def test_auto_title_is_the_first_message_cut_at_a_word(first: str, title: str | None) -> None:
    made = auto_title(first)
    if title is not None:
        assert made == title
    else:  # no space to cut at: cut inside the word, still marked as cut
        assert made.endswith(" …") and len(made) <= 50
    assert len(made) <= 50


def test_a_chat_is_listed_with_the_title_from_its_first_message(api: APIClient) -> None:
    new = _chat(api)
    named = _chat(api, "Wie heißt mein Hund eigentlich?", "Und meine Katze?")
    rows = {row["id"]: row for row in _listed(api)}
    assert rows[named]["title"] == "Wie heißt mein Hund eigentlich?"
    assert rows[named]["title_auto"] is True
    assert rows[new]["title"] == "Neues Gespräch"
    # The page shows the same title in the list and as its heading.
    browser = Client()
    browser.force_login(Session.objects.get(pk=named).user)
    html = browser.get(f"/chat/{named}/").content.decode()
    assert '<h1 id="chat-title" class="chat-title">Wie heißt mein Hund eigentlich?</h1>' in html


def test_rename_keeps_the_order_and_blank_brings_the_automatic_title_back(
    api: APIClient,
) -> None:
    older = _chat(api, "Erster Chat")
    newer = _chat(api, "Zweiter Chat")
    answer = api.patch(f"/api/sessions/{older}/", {"title": "  Hausbau   2026 "}, format="json")
    assert answer.status_code == 200
    assert answer.json()["title"] == "Hausbau 2026" and answer.json()["title_auto"] is False
    assert [row["id"] for row in _listed(api)][:2] == [newer, older]  # renaming is not news
    assert api.get(f"/api/sessions/{older}/").json()["title"] == "Hausbau 2026"
    back = api.patch(f"/api/sessions/{older}/", {"title": ""}, format="json")
    assert back.json()["title"] == "Erster Chat" and back.json()["title_auto"] is True


@pytest.mark.parametrize(
    ("body", "step"),
    [
        ({"title": "x" * 201}, "titel_zu_lang"),
        ({"title": "a\x07b"}, "titel_unlesbar"),
        ({}, "kein_titel"),
        ({"title": None}, "kein_titel"),
        ({"title": "a\x00b"}, "titel_unlesbar"),
        ({"title": ["Liste"]}, "titel_unlesbar"),
    ],
    ids=["too-long", "control-char", "missing", "null", "nul", "not-text"],
)
def test_a_bad_title_is_refused_in_german_and_nothing_changes(
    api: APIClient, body: dict[str, Any], step: str
) -> None:
    session_id = _chat(api, "Hallo")
    answer = api.patch(f"/api/sessions/{session_id}/", body, format="json")
    assert answer.status_code == 400
    assert answer.json()["step"] == step and answer.json()["reason"]
    assert Session.objects.get(pk=session_id).title == ""


def test_delete_removes_the_chat_and_its_messages_but_keeps_memories(
    api: APIClient, user: Any
) -> None:
    session_id = _chat(api, "Merke dir: Fliesen bestellen", "Ja")
    kept = _chat(api, "Hallo")
    session = Session.objects.get(pk=session_id)
    memory = MemoryEntry.objects.create(
        user=user, character=session.character, session=session, text="Fliesen bestellen"
    )
    assert api.delete(f"/api/sessions/{session_id}/").status_code == 204
    assert not Session.objects.filter(pk=session_id).exists()
    assert not Turn.objects.filter(session_id=session_id).exists()
    memory.refresh_from_db()
    assert memory.session_id is None and memory.text == "Fliesen bestellen"
    assert [row["id"] for row in _listed(api)] == [kept]
    again = api.delete(f"/api/sessions/{session_id}/")
    assert again.status_code == 404 and again.json()["step"] == "gespraech_unbekannt"


def test_another_persons_chat_cannot_be_read_renamed_deleted_or_found(
    api: APIClient, other_api: APIClient
) -> None:
    mine = _chat(api, "Mein Geheimnis heißt Zitronenkuchen")
    assert other_api.get(f"/api/sessions/{mine}/").status_code == 404
    assert (
        other_api.patch(f"/api/sessions/{mine}/", {"title": "x"}, format="json").status_code == 404
    )
    assert other_api.delete(f"/api/sessions/{mine}/").status_code == 404
    assert _listed(other_api, "Zitronenkuchen") == []
    assert Session.objects.get(pk=mine).title == ""
    assert [row["id"] for row in _listed(api, "zitronenkuchen")] == [mine]


def test_search_finds_title_and_text_with_an_excerpt(api: APIClient) -> None:
    renamed = _chat(api, "Hallo")
    api.patch(f"/api/sessions/{renamed}/", {"title": "Urlaub in Tirol"}, format="json")
    by_text = _chat(api, "Hallo", "Wann kommt der Architekt Brenner auf die Baustelle?")
    _chat(api, "Etwas ganz anderes")
    assert [row["id"] for row in _listed(api, "tirol")] == [renamed]
    found = _listed(api, "ARCHITEKT")
    assert [row["id"] for row in found] == [by_text]
    assert "Architekt Brenner" in found[0]["match"]
    assert found[0]["title"] == "Hallo"
    # Nova's words are searched too (the offline reply to "Hallo" greets her).
    reply = Turn.objects.filter(session_id=by_text, role=Turn.Role.ASSISTANT).first()
    assert reply is not None
    word = max(reply.text.split(), key=len).strip(".,!?„“")
    assert by_text in [row["id"] for row in _listed(api, word)]


@pytest.mark.parametrize(
    ("query", "step"),
    [("a\x00b", "anfrage_unlesbar"), ("x" * 201, "anfrage_zu_lang")],
    ids=["nul", "too-long"],
)
def test_a_bad_search_is_refused_in_german(api: APIClient, query: str, step: str) -> None:
    answer = api.get("/api/sessions/", {"q": query})
    assert answer.status_code == 400 and answer.json()["step"] == step


def test_the_chat_list_costs_the_same_queries_for_one_chat_or_five(api: APIClient) -> None:
    _chat(api, "Eins")
    with CaptureQueriesContext(connection) as one:
        _listed(api, "E")
    for n in range(4):
        _chat(api, f"Erzähl mir Nummer {n}")
    with CaptureQueriesContext(connection) as five:
        rows = _listed(api, "E")
    assert len(rows) == 5
    assert len(five) == len(one)
