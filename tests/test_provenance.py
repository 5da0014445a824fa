"""Provenance in the final words (seed 003 §2.3, §3.3; seed 002 §1a.4), through the fake model:
the composer's content says a record as a record; a reply that drops that hedge and citation,
says "ich weiß" about it, or adds a fact without a source is flagged in Turn.checks and shown in
the inspector; the deviation above its threshold marks the turn with the new words."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from conversation.models import PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from conversation.pipeline.provenance import provenance_check
from directives.tribunal import TribunalResult
from files.retrieval import RetrievalResult
from tests.fakes.openai_server import FakeOpenAI
from tests.records import RECORD

pytestmark = pytest.mark.django_db

CONTENT = (
    "In deinen Unterlagen steht: Der Termin mit Brenner ist am Donnerstag um 14 Uhr "
    "(notizen/hausbau.md:3-7)."
)


def starts(marker: str) -> Callable[[dict], bool]:
    return lambda body: body["messages"][0]["content"].startswith(marker)


@pytest.fixture(autouse=True)
def stubs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("directives.blocks.directives_block", lambda *, user: "")
    monkeypatch.setattr(
        "directives.tribunal.review", lambda *, user, reply: TribunalResult("keine_direktiven")
    )
    monkeypatch.setattr(
        "files.retrieval.records_for_turn",
        lambda **kw: RetrievalResult(records=[dict(RECORD)], log={"hits": 1}),
    )


def turn_with(fake: FakeOpenAI, session: Session, user: User, content: str, reply: str) -> Turn:
    fake.add(content, match=starts("[VERFASSER]"))
    fake.add(reply, match=starts("[IDENTITAET]"))
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    assert result.reply == reply
    return Turn.objects.get(pk=result.turn_id)


def tribunal_outcome(turn: Turn) -> str:
    return PipelineLog.objects.get(turn=turn, node="tribunal").outcome


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(
            "In deinen Unterlagen steht, dass der Termin mit Brenner am Donnerstag um 14 Uhr ist.",
            id="hedge-kept",
        ),
        pytest.param(
            "Ich habe Aufzeichnungen, die sagen: Brenner kommt am Donnerstag um 14 Uhr.",
            id="records-speech-act",
        ),
        pytest.param(
            "Brenner kommt am Donnerstag um 14 Uhr (notizen/hausbau.md:3-7).", id="citation-kept"
        ),
    ],
)
def test_a_reply_that_keeps_the_provenance_is_not_flagged(
    fake_llm: FakeOpenAI, session: Session, user: User, reply: str
) -> None:
    turn = turn_with(fake_llm, session, user, CONTENT, reply)
    origin = turn.checks["herkunft"]
    assert origin["aussagen_aus_aufzeichnungen"] == 1
    assert origin["outcome"] == "ok", origin
    assert tribunal_outcome(turn) == "keine_direktiven"


def test_a_reply_that_drops_the_hedge_and_citation_is_flagged_and_shown(
    fake_llm: FakeOpenAI, session: Session, user: User, client: Client
) -> None:
    reply = "Der Termin mit Brenner ist am Donnerstag um 14 Uhr."
    turn = turn_with(fake_llm, session, user, CONTENT, reply)
    origin = turn.checks["herkunft"]
    assert origin["outcome"] == "herkunft_verloren"
    assert origin["ohne_herkunft"] == [reply]
    assert tribunal_outcome(turn) == "herkunft_verloren"

    client.force_login(user)
    page = client.get(reverse("turn-inspector", args=[turn.pk])).content.decode()
    assert 'id="provenance-lost"' in page
    assert "Aussage aus den Aufzeichnungen ohne Hinweis und Fundstelle" in page
    assert reply in page


def test_i_know_about_record_content_is_flagged(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    reply = "Ich weiß, dass der Termin mit Brenner am Donnerstag um 14 Uhr ist."
    turn = turn_with(fake_llm, session, user, CONTENT, reply)
    assert turn.checks["herkunft"]["ich_weiss"] == [reply]
    assert tribunal_outcome(turn) == "herkunft_verloren"


def test_a_fact_without_a_source_in_the_content_is_flagged(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    reply = (
        "In deinen Unterlagen steht, dass Brenner am Donnerstag um 14 Uhr kommt. "
        "Er bringt 3 Pläne von Frau Kessler mit."
    )
    turn = turn_with(fake_llm, session, user, CONTENT, reply)
    origin = turn.checks["herkunft"]
    assert origin["ohne_quelle"] == ["Er bringt 3 Pläne von Frau Kessler mit."]
    assert origin["ohne_herkunft"] == []


def test_deviation_above_the_threshold_marks_the_turn_with_the_new_words(
    fake_llm: FakeOpenAI, session: Session, user: User, client: Client
) -> None:
    turn = turn_with(
        fake_llm,
        session,
        user,
        "Dein Hund heißt Bello.",
        "Bello frisst gern warmes Käsebrot mit scharfem Senf.",
    )
    drift = turn.checks["abweichung"]
    assert turn.deviation is not None and turn.deviation > drift["schwelle"]
    assert drift["ueber_schwelle"] is True
    assert {"käsebrot", "senf", "frisst"} <= set(drift["neue_woerter"])
    client.force_login(user)
    page = client.get(reverse("turn-inspector", args=[turn.pk])).content.decode()
    assert 'id="deviation-above"' in page and "<code>käsebrot</code>" in page

    # Below the threshold nothing is marked.
    fake_llm.reset()
    calm = turn_with(fake_llm, session, user, "Dein Hund heißt Bello.", "Dein Hund heißt Bello.")
    assert calm.checks["abweichung"]["ueber_schwelle"] is False
    assert calm.checks["abweichung"]["neue_woerter"] == []


@pytest.mark.parametrize(
    ("reply", "flagged"),
    [
        pytest.param("Schöner Name für einen Hund!", False, id="one-new-noun-is-style"),
        pytest.param("Bello ist 7 Jahre alt.", True, id="new-number"),
        pytest.param("Bello wohnt bei Familie Kessler.", True, id="two-new-names"),
        pytest.param("Dein Hund heißt also Bello.", False, id="nothing-new"),
    ],
)
def test_a_claim_without_a_source_is_a_new_number_or_name(reply: str, flagged: bool) -> None:
    check = provenance_check(reply, "Dein Hund heißt Bello.", [])
    assert bool(check["ohne_quelle"]) is flagged, check
