"""Issue 28's quoted sentences that no other test file carries, offline over the real chat path:
the action each reaches and the database after "ja" and after "nein".

(The changes, deletes, reactivations and forms of address are in test_offline_actions.py, the
answers to an open question in conversation/tests/test_pending_answers.py, the knowledge
requests in knowledge/tests/test_requests_issue28.py.)
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation import address
from conversation.models import MemoryEntry, PendingQuestion, PipelineLog, Session
from directives import services
from directives.models import Directive
from directives.tests.helpers import say

pytestmark = pytest.mark.django_db

# Orders that never reached their confirmation question before (issue 28), and the plain rule
# each is stored as.
ORDERS = [
    ("Ich will nicht, dass du Fluchwörter benutzt.", "Fluchwörter"),
    ("Verzichte künftig auf Anglizismen.", "Anglizismen"),
    ("Erinnere mich nie an meine Prüfung.", "Prüfung"),
    ("Ab morgen bitte keine Fremdwörter mehr verwenden.", "Fremdwörter"),
]


def _active(user: Any) -> list[str]:
    return list(Directive.objects.filter(user=user, active=True).values_list("text", flat=True))


def _router(answer: dict[str, Any]) -> PipelineLog:
    return PipelineLog.objects.get(turn_id=answer["turn_id"], node="router")


@pytest.mark.parametrize(("text", "word"), ORDERS, ids=[w for _, w in ORDERS])
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_an_order_reaches_its_question_and_the_answer_decides(
    api: APIClient, session: Session, user: Any, text: str, word: str, answer: str
) -> None:
    asked = say(api, session, text)

    assert _router(asked).outcome == "directives"
    assert asked["status"] == "rueckfrage"
    assert "anlegen" in asked["question"] and word in asked["question"]
    assert not Directive.objects.exists()  # nothing before the consent

    done = say(api, session, answer)

    if answer == "ja":
        assert done["status"] == "abgeschlossen"
        (rule,) = _active(user)
        assert word in rule and not rule.lower().startswith(("ab morgen", "bitte"))
    else:
        assert done["status"] == "dismissed"
        assert not Directive.objects.exists()
    # The order is no fact about the person: it never becomes a memory (issue 28).
    assert not MemoryEntry.objects.filter(text__icontains=word).exists()


def test_a_missed_order_is_not_remembered_either(
    api: APIClient, session: Session, user: Any
) -> None:
    """Even where no agent takes a sentence aimed at Nova as an order, memory does not keep
    it as something the person said about herself."""
    say(api, session, "Ich fände es schön, wenn du mir öfter Fragen stellst.")
    say(api, session, "Mein Hund heißt Bello und ist drei Jahre alt.")
    kept = list(MemoryEntry.objects.values_list("text", flat=True))
    assert any("Bello" in text for text in kept)
    assert not any("Fragen stellst" in text for text in kept)


QUESTIONS = [
    "Was hab ich dir alles verboten?",
    "Gibt es Regeln, an die du dich halten musst?",
    "Zeig mir mal, was du dir an Regeln notiert hast.",
]


@pytest.mark.parametrize("text", QUESTIONS)
def test_a_question_about_the_rules_lists_them_and_changes_nothing(
    api: APIClient, session: Session, user: Any, text: str
) -> None:
    for rule in ("Sprich nie von Milch", "Keine Emojis verwenden"):
        services.directive_create(user=user, text=rule)

    answer = say(api, session, text)

    assert _router(answer).outcome == "directives"
    assert answer["status"] == "abgeschlossen"
    assert "Sprich nie von Milch" in answer["reply"] and "Keine Emojis" in answer["reply"]
    assert sorted(_active(user)) == ["Keine Emojis verwenden", "Sprich nie von Milch"]
    assert not PendingQuestion.objects.exists()  # a question asks nothing back
    assert not MemoryEntry.objects.filter(text__icontains="Regeln").exists()


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_sie_as_people_say_it_switches_nova_to_sie(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    asked = say(api, session, "Sprich mich ab jetzt mit Sie an")
    assert asked["status"] == "rueckfrage"

    say(api, session, answer)

    assert address.siezen(user) is (answer == "ja")
    later = say(api, session, "Wie spät ist es?")
    if answer == "ja":
        assert not address.has_du(later["reply"]), later["reply"]


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_an_order_during_an_open_question_is_not_swallowed(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    """ "Korrigiere die Regel über Anglizismen: auch keine Fachbegriffe." was read as a refusal
    of the open question ("keine") and lost."""
    services.directive_create(user=user, text="Keine Anglizismen verwenden")
    first = say(api, session, "Sprich nie von Milch!")
    assert first["status"] == "rueckfrage"

    asked = say(api, session, "Korrigiere die Regel über Anglizismen: auch keine Fachbegriffe.")

    assert asked["status"] == "rueckfrage"
    assert "Fachbegriffe" in asked["question"] and "Anglizismen" in asked["question"]
    say(api, session, answer)
    rules = _active(user)
    assert not any("Milch" in rule for rule in rules)  # the old question never executed
    if answer == "ja":
        (rule,) = rules
        assert "Anglizismen" in rule and "Fachbegriffe" in rule
    else:
        assert rules == ["Keine Anglizismen verwenden"]


@pytest.mark.parametrize("consent", ["ja sicher", "richtig", "korrekt"])
def test_plain_consents_execute_at_once(
    api: APIClient, session: Session, user: Any, consent: str
) -> None:
    say(api, session, "Sprich nie von Milch!")

    done = say(api, session, consent)

    assert done["status"] == "abgeschlossen"
    assert _active(user) == ["Sprich nie von Milch"]
