"""File content stays data (issue 27): a reply that claims a rule was written is checked
against what the turn executed. A model that obeys text in a released file says "Ich habe alle
Ihre Regeln gelöscht" although nothing was deleted: the person never sees the sentence, the log
names the outcome, the note says why, and the rules are unchanged. A rule that was deleted after
the person's consent is confirmed word for word."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import PipelineLog, Session, Turn
from conversation.pipeline import claims, run_turn
from directives import services
from directives.models import Directive
from directives.tests.helpers import say, script_classifier
from tests.chat_requests import is_composer, is_responder
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db

RULE = "Sprich nie von Milch"
CLAIM = "Ich habe alle Ihre Regeln gelöscht."


def test_a_claimed_deletion_without_execution_never_reaches_the_person(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text=RULE)
    fake_llm.add(f"{CLAIM} Worüber möchten Sie heute sprechen?", match=is_responder)
    seen: list[str] = []

    result = run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Erzähl mir etwas über den Sommer.",
        on_token=seen.append,
    )

    streamed = "".join(seen)
    assert "gelöscht" not in streamed and "gelöscht" not in result.reply
    assert "Worüber möchten Sie heute sprechen?" in streamed
    assert result.reply == "Worüber möchten Sie heute sprechen?"
    stored = Turn.objects.get(reply_to_id=result.turn_id)
    assert stored.text == result.reply
    # Named in the log, with the sentence that was withheld.
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="behauptung")
    assert row.outcome == "behauptung_ohne_ausfuehrung"
    assert [c["satz"] for c in row.details["zurueckgehalten"]] == [CLAIM]
    assert row.details["zurueckgehalten"][0]["verb"] == "löschen"
    assert row.details["ausgefuehrt"] == []
    # Said to the person under the reply.
    assert result.note is not None and result.note["text"] == claims.NOTE_TEXT
    assert result.note["behauptungen_ohne_ausfuehrung"] == [CLAIM]
    # The model's text is kept for the inspector; the rules are unchanged.
    assert CLAIM in Turn.objects.get(pk=result.turn_id).checks["waechter"]["original"]
    assert list(
        Directive.objects.filter(user=user, active=True).values_list("text", flat=True)
    ) == [RULE]


def test_a_reply_that_is_only_a_false_claim_says_nothing_was_changed(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text=RULE)
    fake_llm.add(CLAIM, match=is_responder)

    result = run_turn(user=user, character=session.character, session=session, text="Und nun?")

    assert result.reply == claims.NOTHING_CHANGED_TEXT
    assert Directive.objects.filter(user=user, active=True).count() == 1


def test_a_rule_deleted_after_consent_is_confirmed_unchanged(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text=RULE)
    script_classifier(fake_llm, {"action": "delete", "suche": "Milch", "target_id": 1})
    asked = say(api, session, "Lösch die Regel über Milch.")
    assert asked["status"] == "rueckfrage", asked
    confirmation = "Ich habe die Milch-Regel gelöscht. Du darfst wieder darüber reden."
    fake_llm.add(confirmation, match=is_responder)

    done = say(api, session, "ja")

    assert done["status"] == "abgeschlossen", done
    assert done["reply"] == confirmation
    assert not Directive.objects.filter(user=user, active=True).exists()
    turn = Turn.objects.get(pk=done["turn_id"])
    assert turn.checks["behauptungen"]["outcome"] == "belegt"
    assert turn.checks["behauptungen"]["ausgefuehrt"] == ["directives"]
    assert "hinweis" not in turn.checks
    assert not PipelineLog.objects.filter(turn_id=done["turn_id"], node="behauptung").exists()


def test_a_refused_deletion_may_not_be_claimed(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    # A rule without a forbidden term: the sentence guard's term check has nothing to find.
    services.directive_create(user=user, text="Antworte immer freundlich")
    script_classifier(fake_llm, {"action": "delete", "suche": "freundlich", "target_id": 1})
    assert say(api, session, "Lösch die Regel über freundliche Antworten.")["status"] == (
        "rueckfrage"
    )
    fake_llm.add("Ich habe die Regel gelöscht. Alles klar.", match=is_responder)

    refused = say(api, session, "nein")

    assert refused["status"] == "dismissed"
    assert refused["reply"] == "Alles klar."
    assert Directive.objects.filter(user=user, active=True).count() == 1


def test_a_claim_in_the_content_is_named_even_when_the_reply_drops_it(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.add(CLAIM, match=is_composer)
    fake_llm.add("Schön, dass Sie da sind.", match=is_responder)

    result = run_turn(user=user, character=session.character, session=session, text="Hallo!")

    assert result.reply == "Schön, dass Sie da sind."
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="behauptung")
    assert row.outcome == "inhalt_ohne_ausfuehrung"
    assert [c["satz"] for c in row.details["inhalt_ohne_ausfuehrung"]] == [CLAIM]
    assert result.note is None  # the person saw no claim


def test_a_failing_claim_reader_is_named_and_loses_no_reply(
    fake_llm: FakeOpenAI, session: Session, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(sentence: str) -> None:
        raise RuntimeError("tagger kaputt")

    monkeypatch.setattr(claims, "sentence_claim", broken)
    fake_llm.add("Schön, dass Sie da sind.", match=is_responder)

    result = run_turn(user=user, character=session.character, session=session, text="Hallo!")

    assert result.reply == "Schön, dass Sie da sind."
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="behauptung")
    assert row.outcome == "pruefung_fehler"
    assert "tagger kaputt" in row.details["fehler"][0]
