"""The whole directives flow over POST /api/sessions/{id}/messages/ and the fake LLM server."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from conversation.models import PendingQuestion, PipelineLog, Session
from directives import services
from directives.agent.agent import DISMISSED_TEXT
from directives.models import Directive, DirectiveStep
from directives.tests.helpers import (
    block_headers,
    classify_prompts,
    last_block,
    responder_prompts,
    say,
    script_classifier,
    sent_to_model,
)
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db

CREATE_QUESTION = "Ich soll die Direktive 'Sprich nie von Milch' anlegen. Soll ich das so machen?"


@pytest.fixture
def llm(fake_llm: FakeOpenAI) -> FakeOpenAI:
    fake_llm.set_default("Mach ich.")
    return fake_llm


def _ask_create(llm: FakeOpenAI, api: APIClient, session: Session) -> dict[str, Any]:
    script_classifier(
        llm, {"action": "create", "anweisung": "Sprich nie von Milch", "kontext": None}
    )
    first = say(api, session, "Sprich nie von Milch!")
    assert first["status"] == "rueckfrage"
    assert first["question"] == CREATE_QUESTION
    assert first["reply"] == CREATE_QUESTION
    return first


def test_create_then_ja_writes_the_row_and_every_step_is_audited(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    _ask_create(llm, api, session)
    assert not Directive.objects.exists()  # nothing before the consent

    done = say(api, session, "ja")

    assert done["status"] == "abgeschlossen"
    row = Directive.objects.get(user=user)
    assert (row.text, row.active, row.replaces_id) == ("Sprich nie von Milch", True, None)
    steps = list(DirectiveStep.objects.filter(user=user).values_list("step", flat=True))
    assert steps == [
        "klassifiziert",
        "validiert",
        "gefragt",
        "beantwortet",
        "ausgefuehrt",
        "verifiziert",
    ]
    executed = DirectiveStep.objects.get(step="ausgefuehrt")
    assert executed.previous == {"gelesen": False}
    assert PendingQuestion.objects.get().status == "ausgefuehrt"
    # The confirmation reaches the responder as content: the person is told it is done.
    assert sent_to_model(llm, "Erledigt: Ab jetzt gilt die Direktive 'Sprich nie von Milch'.")


def test_nein_executes_nothing_and_says_so(
    llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    _ask_create(llm, api, session)

    answer = say(api, session, "Nein")

    assert answer["status"] == "dismissed"
    assert answer["step"] == "abgelehnt"
    assert not Directive.objects.exists()
    assert sent_to_model(llm, DISMISSED_TEXT)
    assert PendingQuestion.objects.get().status == "dismissed"
    answered = DirectiveStep.objects.get(step="beantwortet")
    assert answered.outcome.startswith("refusal:")
    assert not DirectiveStep.objects.filter(step="ausgefuehrt").exists()


def test_nein_offline_reply_is_the_dismissed_sentence(api: APIClient, session: Session) -> None:
    first = say(api, session, "Sprich nie von Milch!")
    assert first["status"] == "rueckfrage"
    answer = say(api, session, "Nein")
    assert answer["status"] == "dismissed"
    assert answer["reply"] == DISMISSED_TEXT
    assert not Directive.objects.exists()


@pytest.mark.parametrize("unclear", ["Wie bitte?", "ist das ok"])
def test_unclear_answer_asks_the_same_question_again(
    llm: FakeOpenAI, api: APIClient, session: Session, unclear: str
) -> None:
    _ask_create(llm, api, session)

    again = say(api, session, unclear)

    assert again["status"] == "rueckfrage"
    assert again["step"] == "unklar"
    assert again["question"] == CREATE_QUESTION
    assert not Directive.objects.exists()
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert Directive.objects.count() == 1


def test_update_keeps_history_and_the_model_sees_ordinals_not_ids(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sieze mich immer")
    old = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert old is not None
    script_classifier(llm, {"action": "update", "anweisung": "Nenn mich Boss", "target_id": 2})

    asked = say(api, session, "Nenn mich ab jetzt Boss")

    assert asked["question"] == (
        "Ich soll die Direktive 'Nenn mich Chef' durch 'Nenn mich Boss' ersetzen. "
        "Soll ich das so machen?"
    )
    prompt = classify_prompts(llm)[-1]
    assert "[1] Sieze mich immer" in prompt and "[2] Nenn mich Chef" in prompt
    assert f"[{old.pk}]" not in prompt
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    old.refresh_from_db()
    new = Directive.objects.get(user=user, active=True, replaces=old)
    assert old.active is False and old.changed_at is not None
    assert old.text == "Nenn mich Chef"  # never changed in place
    assert new.text == "Nenn mich Boss"
    executed = DirectiveStep.objects.get(step="ausgefuehrt", action="update")
    assert executed.previous["text"] == "Nenn mich Chef" and executed.previous["active"] is True


def test_delete_by_description_with_two_candidates_asks_which(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    services.directive_create(user=user, text="Erwähne nie Milchreis")
    services.directive_create(user=user, text="Sieze mich immer")
    script_classifier(llm, {"action": "delete", "suche": "Milch", "target_id": None})

    choice = say(api, session, "Vergiss die Milch-Regel")

    assert choice["status"] == "rueckfrage"
    assert choice["question"] == (
        "Dazu passen mehrere Direktiven: [1] 'Sprich nie von Milch', "
        "[2] 'Erwähne nie Milchreis'. Welche soll ich entfernen?"
    )
    # A choice question never executes, not even on "ja".
    again = say(api, session, "ja")
    assert again["step"] == "auswahl_offen"
    assert Directive.objects.filter(active=True).count() == 3

    picked = say(api, session, "die zweite")
    assert picked["status"] == "rueckfrage"
    assert picked["question"] == (
        "Ich soll die Direktive 'Erwähne nie Milchreis' entfernen. Soll ich das so machen?"
    )
    assert Directive.objects.filter(active=True).count() == 3  # a choice is never a write

    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert list(Directive.objects.filter(active=True).values_list("text", flat=True)) == [
        "Sprich nie von Milch",
        "Sieze mich immer",
    ]


def test_an_ordinal_that_was_never_shown_is_refused_like_a_missing_row(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any, other_user: Any
) -> None:
    foreign = services.directive_create(user=other_user, text="Sprich nie von Milch").directive
    assert foreign is not None
    services.directive_create(user=user, text="Sieze mich immer")
    script_classifier(llm, {"action": "delete", "target_id": foreign.pk})

    answer = say(api, session, "Lösch die Regel")

    assert answer["status"] == "fehler"
    assert answer["step"] == "nicht_gefunden"
    assert answer["question"] is None
    assert Directive.objects.get(pk=foreign.pk).active is True
    assert not PendingQuestion.objects.exists()


@pytest.mark.parametrize(
    ("model_answer", "step"),
    [
        pytest.param("Klar, mache ich!", "kein_json", id="not-json"),
        pytest.param('{"action": "create", "anweisung": "Sprich nie', "kein_json", id="truncated"),
        pytest.param('["create"]', "kein_objekt", id="list"),
        pytest.param("null", "kein_objekt", id="null"),
        pytest.param('{"action": "create", "anweisung": 7}', "feld_falscher_typ", id="int-text"),
        pytest.param('{"action": ["create"]}', "feld_falscher_typ", id="list-action"),
        pytest.param('{"action": "delete", "target_id": "drei"}', "kennung_unlesbar", id="id"),
        pytest.param('{"action": "delete", "target_id": true}', "kennung_unlesbar", id="bool-id"),
        pytest.param('{"action": "explode"}', "aktion_unbekannt", id="unknown-action"),
        pytest.param('{"anweisung": "Sprich nie von Milch"}', "aktion_fehlt", id="no-action"),
    ],
)
def test_unreadable_model_answers_fall_back_to_the_offline_classifier_and_only_ask(
    llm: FakeOpenAI, api: APIClient, session: Session, model_answer: str, step: str
) -> None:
    # Issue 13: the reader names the failure, the offline classifier reads the person's words
    # instead, and the order reaches its question; nothing is written without a yes.
    script_classifier(llm, model_answer)

    answer = say(api, session, "Sprich nie von Milch!")

    assert answer["status"] == "rueckfrage"
    assert answer["question"].endswith("Soll ich das so machen?")
    assert not Directive.objects.exists()
    row = PipelineLog.objects.get(turn_id=answer["turn_id"], node="agent")
    assert row.details["ersatz_offline"] is True
    assert row.details["modellschritt"] == step
    classified = DirectiveStep.objects.get(step=DirectiveStep.Step.CLASSIFIED)
    assert classified.outcome == "ersatz_offline"
    assert classified.details["modellschritt"] == step


def test_an_expired_question_executes_nothing(
    llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    _ask_create(llm, api, session)
    PendingQuestion.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    answer = say(api, session, "ja")

    assert answer["status"] == "fehler"
    assert answer["step"] == "abgelaufen"
    assert not Directive.objects.exists()
    assert PendingQuestion.objects.get().status == "abgelaufen"


def test_correction_at_the_gate_re_asks_with_the_corrected_wording(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    script_classifier(llm, {"action": "create", "anweisung": "Nenn mich immer Chef"})
    say(api, session, "Nenn mich immer Chef")

    corrected = say(api, session, "ja, aber sag 'Boss' statt 'Chef'")

    assert corrected["status"] == "rueckfrage"
    assert corrected["step"] == "korrigiert"
    assert corrected["question"] == (
        "Ich soll die Direktive 'Nenn mich immer Boss' anlegen. Soll ich das so machen?"
    )
    assert not Directive.objects.exists()  # a correction is never consent
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert Directive.objects.get(user=user).text == "Nenn mich immer Boss"


def test_undo_restores_the_previous_state_through_the_same_confirmation(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    old = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert old is not None
    new = services.directive_update(user=user, directive_id=old.pk, text="Nenn mich Boss")
    assert new.directive is not None
    script_classifier(llm, {"action": "undo"})

    asked = say(api, session, "Mach die letzte Änderung rückgängig")

    assert asked["question"] == (
        "Ich soll die letzte Änderung rückgängig machen und 'Nenn mich Boss' wieder durch "
        "'Nenn mich Chef' ersetzen. Soll ich das so machen?"
    )
    assert Directive.objects.get(pk=new.directive.pk).active is True
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert list(Directive.objects.filter(active=True).values_list("pk", flat=True)) == [old.pk]


def test_over_budget_the_person_is_told_at_the_next_write_and_nothing_is_cut(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any, settings: Any
) -> None:
    settings.DIRECTIVES_BLOCK_BUDGET_CHARS = 100
    for n in range(4):
        services.directive_create(user=user, text=f"Regel Nummer {n} mit etwas Text dazu")
    asked = _ask_create_over_budget(llm, api, session)
    assert asked["question"].startswith("Hinweis: Deine Direktiven sind zusammen")
    assert asked["question"].endswith(CREATE_QUESTION)
    assert say(api, session, "ja")["status"] == "abgeschlossen"

    say(api, session, "Erzähl mir was")
    _name, block = last_block(responder_prompts(llm)[-1])
    for n in range(4):
        assert f"Regel Nummer {n} mit etwas Text dazu" in block
    assert "Sprich nie von Milch" in block


def _ask_create_over_budget(llm: FakeOpenAI, api: APIClient, session: Session) -> dict[str, Any]:
    script_classifier(llm, {"action": "create", "anweisung": "Sprich nie von Milch"})
    return say(api, session, "Sprich nie von Milch!")


def test_directives_block_is_the_last_block_of_the_responder_prompt(
    llm: FakeOpenAI, api: APIClient, session: Session, user: Any
) -> None:
    _ask_create(llm, api, session)
    say(api, session, "ja")
    services.directive_create(user=user, text="Sieze mich immer", context="seit dem Umzug")

    say(api, session, "Wie war dein Tag?")

    system = responder_prompts(llm)[-1]
    headers = block_headers(system)
    assert headers[-1] == "DIREKTIVEN"
    assert headers.count("DIREKTIVEN") == 1
    assert headers.index("REGELN") < headers.index("DIREKTIVEN")
    name, block = last_block(system)
    assert name == "DIREKTIVEN"
    assert "sie sind dein Vertrag mit dem Nutzer" in block
    assert block.index("- Sprich nie von Milch") < block.index("- Sieze mich immer")
    assert "(Kontext: seit dem Umzug)" in block


def test_read_lists_the_active_directives_in_german(
    api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    gone = services.directive_create(user=user, text="Sag nie Schatz").directive
    assert gone is not None
    services.directive_deactivate(user=user, directive_id=gone.pk)

    answer = say(api, session, "Welche Regeln hast du?")

    assert answer["status"] == "abgeschlossen"
    assert answer["step"] == "gelesen"
    assert "1. Sprich nie von Milch" in answer["reply"]
    assert "Schatz" not in answer["reply"]


def test_offline_create_keeps_the_implicit_context_from_the_session(
    api: APIClient, session: Session, user: Any
) -> None:
    from conversation.models import Turn

    Turn.objects.create(session=session, role="assistant", text="Milch ist gesund, weißt du.")

    asked = say(api, session, "Sag das nie mehr!")

    assert asked["status"] == "rueckfrage"
    assert "Kontext: Bezieht sich auf Novas Aussage: Milch ist gesund" in asked["question"]
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    row = Directive.objects.get(user=user)
    assert row.text == "Sag das nie mehr"
    assert "Milch ist gesund" in row.context


def test_offline_duplicate_and_reactivate(api: APIClient, session: Session, user: Any) -> None:
    gone = services.directive_create(user=user, text="Sieze mich immer").directive
    assert gone is not None
    services.directive_deactivate(user=user, directive_id=gone.pk)

    # create of a deleted rule is corrected to reactivate (seed 000 §6.3): no duplicate row.
    asked = say(api, session, "Sieze mich immer")
    assert asked["question"] == (
        "Ich soll die Direktive 'Sieze mich immer' wiederherstellen. Soll ich das so machen?"
    )
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert Directive.objects.filter(user=user).count() == 1
    assert Directive.objects.get(user=user).active is True

    # a similar active rule: "Existiert bereits. Aktualisieren?" (seed 000 §6.2)
    asked = say(api, session, "Sieze mich bitte immer")
    assert asked["question"] == (
        "Die Direktive 'Sieze mich immer' existiert bereits. "
        "Soll ich sie durch 'Sieze mich bitte immer' ersetzen?"
    )


def test_offline_a_new_form_of_address_replaces_the_old_one(
    api: APIClient, session: Session, user: Any
) -> None:
    # seed 000 §4.2: "Nenn mich ab jetzt Boss" updates the form of address, it does not add one.
    assert say(api, session, "Nenn mich ab jetzt Chef.")["status"] == "rueckfrage"
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    old = Directive.objects.get(user=user, active=True)

    asked = say(api, session, "Nenn mich ab jetzt Boss!")
    assert asked["status"] == "rueckfrage"
    assert "'Nenn mich ab jetzt Chef'" in asked["question"]
    assert "'Nenn mich ab jetzt Boss'" in asked["question"]
    assert say(api, session, "ja")["status"] == "abgeschlossen"

    new = Directive.objects.get(user=user, active=True)
    assert new.text == "Nenn mich ab jetzt Boss"
    assert new.replaces_id == old.pk
    old.refresh_from_db()
    assert old.active is False and old.text == "Nenn mich ab jetzt Chef"


def test_offline_a_naming_ban_is_a_new_rule_not_an_update(
    api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Nenn mich ab jetzt Boss")
    asked = say(api, session, "Nenn mich nie Schatz!")
    # Stored distilled (seed 000 §4.1, issue 17), still a new rule beside the naming rule.
    assert asked["question"] == (
        "Ich soll die Direktive 'Nutzer nicht Schatz nennen' anlegen. Soll ich das so machen?"
    )
