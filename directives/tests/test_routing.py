"""Issue 12: what people actually say reaches the right agent, offline and through the model.

Every quoted sentence over the real chat path, with the database state after "ja" and "nein";
the labelled routing set's offline targets; the open question that a new message does not
swallow; the router's model call and its named fallback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.agents import all_agents
from conversation.models import PendingQuestion, PipelineLog, Session
from conversation.pipeline import router
from conversation.understanding import understand
from conversation.vocabulary import QuestionStatus
from directives import services
from directives.models import Directive, DirectiveStep
from directives.tests.helpers import say, script_classifier
from tests.fakes.openai_server import FakeOpenAI

CREATES = [
    ("Ich möchte, dass du mich siezt.", "Den Nutzer immer siezen"),
    ("Keine Emojis mehr, bitte.", "Keine Emojis verwenden"),
    ("Ab sofort bitte auf Englisch antworten.", "Immer auf Englisch antworten"),
    ("Sag nie wieder Schatz zu mir", "Nutzer nicht Schatz nennen"),
]


def _active(user: Any) -> set[str]:
    return set(Directive.objects.filter(user=user, active=True).values_list("text", flat=True))


def _route(answer: dict[str, Any]) -> PipelineLog:
    return PipelineLog.objects.get(turn_id=answer["turn_id"], node="router")


# -- offline, every quoted sentence -------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "rule"), CREATES, ids=[t for t, _ in CREATES])
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_offline_orders_ask_with_the_distilled_rule(
    api: APIClient, session: Session, user: Any, text: str, rule: str, answer: str
) -> None:
    asked = say(api, session, text)

    assert asked["status"] == "rueckfrage"
    assert asked["question"] == f"Ich soll die Direktive '{rule}' anlegen. Soll ich das so machen?"
    # seed 000 §4.1: the rule is stored distilled, the person's words stay in the audit step.
    classified = DirectiveStep.objects.get(user=user, step=DirectiveStep.Step.CLASSIFIED)
    assert classified.details["text"] == text
    done = say(api, session, answer)
    if answer == "ja":
        assert done["status"] == "abgeschlossen"
        assert _active(user) == {rule}
    else:
        assert done["status"] == "dismissed"
        assert not Directive.objects.exists()


@pytest.mark.django_db
def test_offline_which_rules_apply_lists_them(api: APIClient, session: Session, user: Any) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")

    answer = say(api, session, "Welche Regeln gelten?")

    assert answer["step"] == "gelesen"
    assert "1. Sprich nie von Milch" in answer["reply"]


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_offline_the_milk_rule_no_longer_applies(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    services.directive_create(user=user, text="Den Nutzer immer siezen")

    asked = say(api, session, "Die Regel mit der Milch gilt nicht mehr.")

    assert asked["question"] == (
        "Ich soll die Direktive 'Sprich nie von Milch' entfernen. Soll ich das so machen?"
    )
    say(api, session, answer)
    expected = {"Den Nutzer immer siezen"} | (set() if answer == "ja" else {"Sprich nie von Milch"})
    assert _active(user) == expected


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_offline_take_that_back_undoes_the_last_change(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    say(api, session, "Keine Emojis mehr, bitte.")
    say(api, session, "ja")
    assert _active(user) == {"Keine Emojis verwenden"}

    asked = say(api, session, "Nimm das zurück.")

    assert asked["question"] == (
        "Ich soll die letzte Änderung rückgängig machen und die Direktive "
        "'Keine Emojis verwenden' wieder entfernen. Soll ich das so machen?"
    )
    say(api, session, answer)
    assert _active(user) == (set() if answer == "ja" else {"Keine Emojis verwenden"})


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_offline_change_the_rule_is_an_update_with_history(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    old = services.directive_create(user=user, text="Sprich nie von Milch").directive
    assert old is not None

    asked = say(api, session, "Ändere die Regel: auch kein Hase")

    assert asked["question"] == (
        "Ich soll die Direktive 'Sprich nie von Milch' durch "
        "'Sprich nie von Milch, auch kein Hase' ersetzen. Soll ich das so machen?"
    )
    say(api, session, answer)
    if answer == "ja":
        new = Directive.objects.get(user=user, active=True)
        assert new.text == "Sprich nie von Milch, auch kein Hase"
        assert new.replaces_id == old.pk  # seed 000 §5.2: a new row replacing the old
        old.refresh_from_db()
        assert old.active is False
    else:
        assert _active(user) == {"Sprich nie von Milch"}
    assert not Directive.objects.filter(text__icontains="Ändere").exists()


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_offline_a_rule_about_another_thing_is_a_new_rule(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")

    asked = say(api, session, "Sprich nie von Käse")

    assert asked["question"] == (
        "Ich soll die Direktive 'Sprich nie von Käse' anlegen. Soll ich das so machen?"
    )
    say(api, session, answer)
    expected = {"Sprich nie von Milch"} | ({"Sprich nie von Käse"} if answer == "ja" else set())
    assert _active(user) == expected


# -- the open question and the next message -----------------------------------------------------


@pytest.mark.django_db
def test_a_question_while_a_question_is_open_is_answered_and_the_question_repeated(
    api: APIClient, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    asked = say(api, session, "Keine Emojis mehr, bitte.")

    other = say(api, session, "Welche Regeln gelten?")

    assert "1. Sprich nie von Milch" in other["reply"]
    assert other["reply"].endswith(f"Und zu vorhin: {asked['question']}")
    assert _active(user) == {"Sprich nie von Milch"}  # never executed by the other message
    assert PendingQuestion.objects.get(session=session).status == QuestionStatus.OPEN
    assert say(api, session, "ja")["status"] == "abgeschlossen"
    assert _active(user) == {"Sprich nie von Milch", "Keine Emojis verwenden"}


@pytest.mark.django_db
def test_chat_while_a_question_is_open_repeats_the_question(
    api: APIClient, session: Session, user: Any
) -> None:
    asked = say(api, session, "Keine Emojis mehr, bitte.")

    other = say(api, session, "Wie findest du eigentlich das Wetter heute?")

    assert other["reply"].endswith(f"Und zu vorhin: {asked['question']}")
    assert not Directive.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_refusal_with_a_new_order_dismisses_and_asks_the_new_one(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    first = say(api, session, "Ich möchte, dass du mich siezt.")
    assert first["status"] == "rueckfrage"

    second = say(api, session, "Nein, nenn mich lieber Chef")

    assert second["status"] == "rueckfrage"
    assert "Chef" in second["question"] and "siezen" not in second["question"]
    old = PendingQuestion.objects.filter(session=session).order_by("created_at").first()
    assert old is not None and old.status == QuestionStatus.DISMISSED
    say(api, session, answer)
    assert _active(user) == ({"Nenn mich lieber Chef"} if answer == "ja" else set())


# -- through the fake model ---------------------------------------------------------------------


def _is_router(body: dict[str, Any]) -> bool:
    return router.PROMPT_MARKER in ((body.get("messages") or [{}])[0].get("content") or "")


@pytest.mark.django_db
@pytest.mark.parametrize(("text", "rule"), CREATES, ids=[t for t, _ in CREATES])
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_model_orders_reach_the_agent(
    fake_llm: FakeOpenAI,
    api: APIClient,
    session: Session,
    user: Any,
    text: str,
    rule: str,
    answer: str,
) -> None:
    fake_llm.set_default("Gern.")
    script_classifier(fake_llm, {"action": "create", "anweisung": rule, "kontext": None})

    asked = say(api, session, text)

    assert _route(asked).outcome == "directives"
    assert asked["question"] == f"Ich soll die Direktive '{rule}' anlegen. Soll ich das so machen?"
    say(api, session, answer)
    assert _active(user) == ({rule} if answer == "ja" else set())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "classified", "step"),
    [
        ("Welche Regeln gelten?", {"action": "read"}, "gelesen"),
        ("Die Regel mit der Milch gilt nicht mehr.", {"action": "delete", "target_id": 1}, None),
        ("Nimm das zurück.", {"action": "undo"}, None),
        ("Ändere die Regel: auch kein Hase", {"action": "update", "target_id": 1}, None),
    ],
)
def test_model_rule_management_reaches_the_agent(
    fake_llm: FakeOpenAI,
    api: APIClient,
    session: Session,
    user: Any,
    text: str,
    classified: dict[str, Any],
    step: str | None,
) -> None:
    fake_llm.set_default("Gern.")
    services.directive_create(user=user, text="Sprich nie von Milch")
    if classified["action"] == "update":
        classified = {**classified, "anweisung": "Sprich nie von Milch, auch kein Hase"}
    script_classifier(fake_llm, classified)

    reached = say(api, session, text)

    assert _route(reached).outcome == "directives"
    if step is not None:
        assert reached["step"] == step
    else:
        assert reached["status"] == "rueckfrage"
        assert say(api, session, "nein")["status"] == "dismissed"
    assert _active(user) == {"Sprich nie von Milch"}


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_the_model_routes_what_the_patterns_miss(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, user: Any, answer: str
) -> None:
    fake_llm.set_default("Gern.")
    text = "Mir wären Antworten ohne Emojis lieber."
    assert router.by_patterns(text, all_agents()) == "gespraech"
    fake_llm.add(json.dumps({"ziel": "directives", "aktion": "create"}), match=_is_router)
    script_classifier(
        fake_llm, {"action": "create", "anweisung": "Keine Emojis verwenden", "kontext": None}
    )

    asked = say(api, session, text)

    log = _route(asked)
    assert (log.outcome, log.details["by"]) == ("directives", "modell")
    router_calls = [r for r in fake_llm.chat_requests() if _is_router(r)]
    assert len(router_calls) == 1 and router_calls[0]["max_tokens"] == router.MAX_TOKENS
    say(api, session, answer)
    assert _active(user) == ({"Keine Emojis verwenden"} if answer == "ja" else set())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("answer", "step"),
    [
        ("Ähm, also {ziel", "kein_json"),
        ("[1, 2]", "kein_objekt"),
        ('{"aktion": "create"}', "ziel_fehlt"),
        ('{"ziel": "kochen"}', "ziel_unbekannt"),
        ('{"ziel": 3}', "feld_falscher_typ"),
    ],
)
def test_an_unreadable_router_answer_falls_back_to_the_patterns(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, answer: str, step: str
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(answer, match=_is_router)

    text = "Mir wären Antworten ohne Emojis lieber."
    reply = say(api, session, text)

    log = _route(reply)
    # The offline reading decides, named as the fallback, with the model's failure.
    assert log.outcome == understand(text).route
    assert (log.details["by"], log.details["fehler"]) == ("rueckfall_offline", step)
    assert not Directive.objects.exists()  # nothing without the person's consent


@pytest.mark.django_db
def test_with_a_model_every_message_is_put_to_it(
    fake_llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    """Issue 28: no pattern pre-filter hides a message from the model; one router call each,
    and the model's verdict stands (the offline reading is only its cross-check)."""
    fake_llm.set_default("Gern.")
    fake_llm.add('{"ziel": "gespraech", "aktion": ""}', match=_is_router, times=2)
    first = say(api, session, "Hallo Nova, wie geht es dir heute?")
    second = say(api, session, "Ich glaube, Emojis passen nicht mehr so recht zu uns.")
    assert len([r for r in fake_llm.chat_requests() if _is_router(r)]) == 2
    for reply in (first, second):
        assert _route(reply).details["by"] == "modell"
    assert not PendingQuestion.objects.exists()
