"""Issue 16 "The turn": the conversation vector's model call runs beside memory recall and
file retrieval, the composer still before the responder, and every prompt byte for byte the
one the turn sent when it ran node after node.

Against the fake OpenAI-compatible server, which records the exact request bodies it got. The
sequential turn is the same runner without ``vector.start`` (the call is then made in
``vector.run``, after retrieval, as before the overlap)."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from conversation.models import Character, MemoryEntry, PipelineLog, Session, Turn
from conversation.pipeline import runner, vector
from conversation.pipeline.state import STOP_PERSON, TurnCancel, TurnResult
from conversation.vocabulary import Status
from directives.tribunal import TribunalResult
from files.retrieval import RetrievalResult
from novaberg import embeddings
from tests.chat_requests import is_composer, is_router, is_vector
from tests.factories import SessionFactory, UserFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.records import RECORD

pytestmark = pytest.mark.django_db

VECTOR_REPLY = json.dumps(
    {
        "strategie": "erinnern",
        "absicht": "knowledge",
        "vehikel": "aussage",
        "impuls": "Der Nutzer fragt nach seinem Termin.",
    }
)
COMPOSER_TEXT = "Der Termin mit Brenner ist am Donnerstag um 14 Uhr (notizen/hausbau.md:3-7)."
QUESTION = "Wann treffe ich den Architekten?"
HISTORY = [
    (Turn.Role.USER, "Wir bauen gerade ein Haus am Lindenweg."),
    (Turn.Role.ASSISTANT, "Wie schön! Wie weit seid ihr schon?"),
]


@pytest.fixture(autouse=True)
def _sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same directives, records and tribunal for every turn (their apps test them)."""
    monkeypatch.setattr(
        "directives.blocks.directives_block",
        lambda *, user: (
            "[DIREKTIVEN]\nDer Nutzer hat folgende absolute Verhaltensanweisungen "
            "erteilt.\n- Sprich mich immer mit Sie an."
        ),
    )
    monkeypatch.setattr(
        "directives.tribunal.review", lambda *, user, reply: TribunalResult("keine_direktiven")
    )
    monkeypatch.setattr(
        "files.retrieval.records_for_turn",
        lambda **kw: RetrievalResult(records=[dict(RECORD)], log={"hits": 1}),
    )


def sequential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "NODES", [n for n in runner.NODES if n is not vector.start])


def person(username: str) -> tuple[User, Session]:
    """A person with the same history and the same memory as every other one made here."""
    user = UserFactory(username=username)
    session = SessionFactory(user=user, character=Character.objects.get(name="Nova"))
    for role, text in HISTORY:
        Turn.objects.create(session=session, role=role, text=text, status=Status.DONE)
    text = "Der Architekt heißt Brenner."
    MemoryEntry.objects.create(
        user=user,
        character=session.character,
        kind="lzg",
        text=text,
        embedding=embeddings.embed_one(text),
        salience=0.6,
    )
    return user, session


def scripted_turn(
    fake: FakeOpenAI, username: str, *, vector_delay_s: float = 0.0
) -> tuple[list[dict[str, Any]], TurnResult]:
    """One turn of a new person; returns the chat request bodies the server got, in order."""
    fake.reset()
    fake.add('{"ziel": "gespraech", "aktion": ""}', match=is_router)
    fake.add(VECTOR_REPLY, match=is_vector, delay_s=vector_delay_s)
    fake.add(COMPOSER_TEXT, match=is_composer)
    fake.set_default("Ihr Termin mit Herrn Brenner ist am Donnerstag um 14 Uhr.")
    user, session = person(username)
    result = runner.run_turn(user=user, character=session.character, session=session, text=QUESTION)
    return fake.chat_requests(), result


def rows(turn_id: int) -> dict[str, PipelineLog]:
    return {row.node: row for row in PipelineLog.objects.filter(turn_id=turn_id)}


def ended(row: PipelineLog) -> Any:
    return row.started_at + timedelta(milliseconds=row.ms)


def test_the_overlapped_turn_sends_every_prompt_byte_for_byte_as_the_sequential_one(
    fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    overlapped, first = scripted_turn(fake_llm, "anna")
    with monkeypatch.context() as patch:
        sequential(patch)
        in_order, second = scripted_turn(fake_llm, "bert")

    # The turn did real work in both runs: the model's vector was read, memory and the
    # record reached the composer, the composer's content reached the responder.
    for result in (first, second):
        assert result.status == Status.DONE, result
        assert rows(result.turn_id)["gespraechsvektor"].outcome == "bestimmt"
    composer_prompt = next(r for r in overlapped if is_composer(r))["messages"][0]["content"]
    for block in ("[GEDAECHTNIS]", "[AUFZEICHNUNGEN]", "[GESPRAECHSVEKTOR]", "erinnern"):
        assert block in composer_prompt
    assert COMPOSER_TEXT in overlapped[-1]["messages"][0]["content"]
    # The exact bodies (messages, model, limits, JSON mode, stream), in the same order:
    # router, vector, composer, responder.
    assert [json.dumps(r, sort_keys=True) for r in overlapped] == [
        json.dumps(r, sort_keys=True) for r in in_order
    ]
    # The router's reading comes first (with a model every message is put to it, issue 28).
    assert [is_router(r) for r in overlapped] == [True, False, False, False]
    assert [is_vector(r) for r in overlapped] == [False, True, False, False]
    assert [bool(r.get("stream")) for r in overlapped] == [False, False, False, True]
    # Overlapped: the vector's call began before retrieval did. In order: after it ended.
    fast, slow = rows(first.turn_id), rows(second.turn_id)
    assert fast["gespraechsvektor"].started_at <= fast["enricher"].started_at
    assert fast["gespraechsvektor"].details["vorab_gesendet"] is True
    assert slow["gespraechsvektor"].started_at >= ended(slow["enricher"])
    assert "vorab_gesendet" not in slow["gespraechsvektor"].details
    # The composer still starts only after the vector was decided (seed 003 §2), and the
    # responder only after the composer (seed 003 §3).
    assert fast["composer"].started_at >= ended(fast["gespraechsvektor"])
    assert fast["responder"].started_at >= ended(fast["composer"])


def test_the_inspector_draws_the_vector_beside_retrieval(fake_llm: FakeOpenAI) -> None:
    # A slow vector call (0.3 s) makes its bar long enough to reach past retrieval's start.
    _, result = scripted_turn(fake_llm, "anna", vector_delay_s=0.3)
    logged = rows(result.turn_id)
    assert logged["gespraechsvektor"].started_at < ended(logged["enricher"])
    assert logged["gespraechsvektor"].ms >= 300  # the call's own time, from its start

    browser = Client()
    browser.force_login(User.objects.get(username="anna"))
    page = browser.get(reverse("turn-inspector", args=[result.turn_id])).content.decode()

    def span(node: str) -> tuple[int, int]:
        found = re.search(rf'data-node="{node}" data-start-ms="(\d+)" data-end-ms="(\d+)"', page)
        assert found, node
        return int(found.group(1)), int(found.group(2))

    vector_start, vector_end = span("gespraechsvektor")
    enricher_start, enricher_end = span("enricher")
    reducer_start, _ = span("reducer")
    assert vector_start <= enricher_start < vector_end  # drawn side by side
    assert vector_start < reducer_start
    assert 'id="side-by-side"' in page
    assert "Gleichzeitig gelaufen" in page


def test_stop_during_the_overlapped_call_ends_the_turn_without_waiting_for_it(
    fake_llm: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_TIMEOUT_S = 30  # only the Stop may end the call here
    cancel = TurnCancel()

    def stop_when_sent(body: dict[str, Any]) -> bool:
        # The person presses Stop the moment the vector's request reaches the server.
        if is_vector(body):
            cancel.stop(STOP_PERSON)
            return True
        return False

    fake_llm.add(VECTOR_REPLY, match=stop_when_sent, delay_s=4.0)
    user, session = person("anna")
    result = runner.run_turn(
        user=user, character=session.character, session=session, text=QUESTION, cancel=cancel
    )

    assert result.status == Status.CANCELLED and result.step == STOP_PERSON
    assert result.total_ms < 3000, result.total_ms  # the 4 s answer was not waited for
    # The router's reading, then the stopped vector call: no composer, no reply.
    assert [is_vector(r) for r in fake_llm.chat_requests()] == [False, True]
    logged = rows(result.turn_id)
    assert logged["abbruch"].outcome == STOP_PERSON
    assert "composer" not in logged and "responder" not in logged
    vector_row = logged.get("gespraechsvektor")
    if vector_row is not None:  # the Stop came while the turn waited for the answer
        assert vector_row.details["modellfehler"] == "abgebrochen", vector_row.details
    # The abandoned request ends at the server's own pace; wait for it, so that it does not
    # answer into a later test.
    deadline = time.monotonic() + 15
    while not fake_llm.stream_outcomes and time.monotonic() < deadline:
        time.sleep(0.05)


def test_an_unreadable_overlapped_answer_falls_back_to_the_rules_named(
    fake_llm: FakeOpenAI,
) -> None:
    fake_llm.add("Das ist kein JSON.", match=is_vector)
    fake_llm.add(COMPOSER_TEXT, match=is_composer)
    user, session = person("anna")
    result = runner.run_turn(user=user, character=session.character, session=session, text=QUESTION)

    row = rows(result.turn_id)["gespraechsvektor"]
    assert row.details["vorab_gesendet"] is True
    assert row.outcome == "ersatz_offline"
    assert row.details["ersatz_offline"] is True and row.details["modellschritt"] == "kein_json"
    # The rules ran after retrieval, so they know memory was found (seed 003: erinnern).
    assert row.details["strategie"] == "erinnern"
    assert result.status == Status.DONE
