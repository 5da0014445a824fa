"""The rules page (/regeln/): every change asks the chat's own question first and executes only
on the consent click, through the gate, with the chat's audit; another person's rule is not
there for the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from conversation.agents import AgentContext
from conversation.models import PendingQuestion
from conversation.vocabulary import QuestionKind
from directives import services
from directives.agent.agent import DirectivesAgent
from directives.agent.validate import Proposal, question_for
from directives.models import Directive, DirectiveStep
from directives.tests.helpers import say

pytestmark = pytest.mark.django_db

PROPOSALS = "/api/directives/proposals/"


def _rows(user: Any) -> list[tuple[int, str, bool, int | None]]:
    return list(
        Directive.objects.filter(user=user)
        .order_by("id")
        .values_list("id", "text", "active", "replaces_id")
    )


def _propose(api: APIClient, **order: Any) -> dict[str, Any]:
    answer = api.post(PROPOSALS, order, format="json")
    assert answer.status_code == 201, answer.content
    body: dict[str, Any] = answer.json()
    assert body["status"] == "rueckfrage"
    return body


def _answer(api: APIClient, pending_id: int, confirm: bool) -> dict[str, Any]:
    answer = api.post(f"{PROPOSALS}{pending_id}/answer/", {"confirm": confirm}, format="json")
    assert answer.status_code == 200, answer.content
    body: dict[str, Any] = answer.json()
    return body


def _steps(user: Any, pending_id: int) -> list[tuple[str, str]]:
    return list(
        DirectiveStep.objects.filter(user=user, pending_id=pending_id)
        .order_by("id")
        .values_list("step", "outcome")
    )


def test_a_new_rule_from_the_page_asks_the_chat_question_and_waits_for_consent(
    api: APIClient, user: Any
) -> None:
    asked = _propose(api, action="create", text="Sprich nie über das Wetter", context="")

    # The chat's exact wording, stored as the open question of the directives agent.
    expected = question_for("create", text="Sprich nie über das Wetter")
    assert asked["question"] == expected
    pending = PendingQuestion.objects.get(pk=asked["pending_id"])
    assert (pending.user, pending.agent, pending.status, pending.question) == (
        user,
        "directives",
        "offen",
        expected,
    )
    assert _rows(user) == []  # nothing before consent
    request_steps = list(
        DirectiveStep.objects.filter(user=user).order_by("id").values_list("step", "outcome")
    )
    assert request_steps == [
        ("klassifiziert", "regelseite"),
        ("validiert", "validiert"),
        ("gefragt", "rueckfrage"),
    ]

    done = _answer(api, asked["pending_id"], True)

    assert (done["status"], done["step"]) == ("abgeschlossen", "ausgefuehrt")
    assert done["text"] == "Erledigt: Ab jetzt gilt die Direktive 'Sprich nie über das Wetter'."
    [(_, text, active, _)] = _rows(user)
    assert (text, active) == ("Sprich nie über das Wetter", True)
    assert _steps(user, asked["pending_id"]) == [
        ("gefragt", "rueckfrage"),
        ("beantwortet", "zustimmung"),
        ("ausgefuehrt", "ausgefuehrt"),
        ("verifiziert", "verifiziert"),
    ]
    assert PendingQuestion.objects.get(pk=asked["pending_id"]).status == "ausgefuehrt"


@pytest.mark.parametrize("action", ["update", "delete", "reactivate", "undo"])
def test_every_change_asks_first_and_runs_only_on_consent(
    api: APIClient, user: Any, action: str
) -> None:
    made = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert made is not None
    if action == "reactivate":
        services.directive_deactivate(user=user, directive_id=made.pk)
    order: dict[str, Any] = {"action": action}
    if action != "undo":
        order["directive_id"] = made.pk
    if action == "update":
        order["text"] = "Nenn mich Boss"
    before = _rows(user)

    asked = _propose(api, **order)
    expected = {
        "update": question_for("update", text="Nenn mich Boss", old_text="Nenn mich Chef"),
        "delete": question_for("delete", text="Nenn mich Chef"),
        "reactivate": question_for("reactivate", text="Nenn mich Chef"),
        "undo": "Ich soll die letzte Änderung rückgängig machen und die Direktive "
        "'Nenn mich Chef' wieder entfernen. Soll ich das so machen?",
    }[action]
    assert asked["question"] == expected
    assert _rows(user) == before

    done = _answer(api, asked["pending_id"], True)

    assert done["status"] == "abgeschlossen", done
    after = _rows(user)
    if action == "update":
        assert [(t, a) for _, t, a, _ in after] == [
            ("Nenn mich Chef", False),
            ("Nenn mich Boss", True),
        ]
        assert after[1][3] == made.pk  # bi-temporal: the new row replaces the old
    else:
        assert [(t, a) for _, t, a, _ in after] == [("Nenn mich Chef", action == "reactivate")]
    assert ("verifiziert", "verifiziert") in _steps(user, asked["pending_id"])


def test_abbrechen_dismisses_the_question_and_changes_nothing(api: APIClient, user: Any) -> None:
    made = services.directive_create(user=user, text="Sieze mich").directive
    assert made is not None
    asked = _propose(api, action="delete", directive_id=made.pk)

    dismissed = _answer(api, asked["pending_id"], False)

    assert (dismissed["status"], dismissed["step"]) == ("dismissed", "abgelehnt")
    assert _rows(user) == [(made.pk, "Sieze mich", True, None)]
    assert PendingQuestion.objects.get(pk=asked["pending_id"]).status == "dismissed"
    assert _steps(user, asked["pending_id"])[-1][0] == "beantwortet"
    assert _steps(user, asked["pending_id"])[-1][1].startswith("refusal")
    # A later consent click on the dismissed question executes nothing.
    again = _answer(api, asked["pending_id"], True)
    assert again["status"] == "fehler"
    assert _rows(user) == [(made.pk, "Sieze mich", True, None)]


def test_a_consent_without_confirm_true_is_refused(api: APIClient, user: Any) -> None:
    asked = _propose(api, action="create", text="Sprich nie von Milch")
    for body in ({}, {"confirm": "vielleicht"}):
        refused = api.post(f"{PROPOSALS}{asked['pending_id']}/answer/", body, format="json")
        assert refused.status_code == 400
        assert refused.json()["step"] == "antwort_unlesbar"
    assert _rows(user) == []
    assert PendingQuestion.objects.get(pk=asked["pending_id"]).status == "offen"


def test_the_page_question_is_the_chat_question(api: APIClient, user: Any) -> None:
    """One gate: the page's open question is answered by a "ja" in the chat just as well, and a
    second answer (the page's click after it) never writes twice."""
    asked = _propose(api, action="create", text="Sprich nie von Milch")
    pending = PendingQuestion.objects.get(pk=asked["pending_id"])

    chat = say(api, pending.session, "ja")
    late = _answer(api, asked["pending_id"], True)

    assert chat["status"] == "abgeschlossen"
    assert late["step"] == "schon_ausgefuehrt"
    assert [(t, a) for _, t, a, _ in _rows(user)] == [("Sprich nie von Milch", True)]


def test_another_persons_rule_and_question_are_not_there(
    api: APIClient, other_api: APIClient, user: Any, other_user: Any
) -> None:
    theirs = services.directive_create(user=other_user, text="Geheime Regel von Bert").directive
    gone = services.directive_create(user=other_user, text="Alte Regel von Bert").directive
    assert theirs is not None and gone is not None
    services.directive_deactivate(user=other_user, directive_id=gone.pk)
    for order in (
        {"action": "update", "directive_id": theirs.pk, "text": "Übernommen"},
        {"action": "delete", "directive_id": theirs.pk},
        {"action": "reactivate", "directive_id": gone.pk},
    ):
        refused = api.post(PROPOSALS, order, format="json")
        assert refused.status_code == 404, order
        assert "Geheime" not in refused.content.decode()
    assert not PendingQuestion.objects.filter(user=user).exists()

    # Bert's own open question cannot be answered by Anna.
    asked = _propose(other_api, action="delete", directive_id=theirs.pk)
    stolen = api.post(f"{PROPOSALS}{asked['pending_id']}/answer/", {"confirm": True}, format="json")
    assert stolen.status_code == 404
    assert Directive.objects.get(pk=theirs.pk).active
    assert PendingQuestion.objects.get(pk=asked["pending_id"]).status == "offen"

    client = Client()
    client.force_login(user)
    page = client.get("/regeln/").content.decode()
    assert "Geheime Regel von Bert" not in page and "Alte Regel von Bert" not in page
    assert asked["question"] not in page


def test_the_page_lists_rules_with_their_history_and_the_open_question(
    user: Any, api: APIClient, django_assert_max_num_queries: Any
) -> None:
    old = services.directive_create(user=user, text="Nenn mich Chef", context="Anrede").directive
    assert old is not None
    services.directive_update(user=user, directive_id=old.pk, text="Nenn mich Boss")
    gone = services.directive_create(user=user, text="Sprich nie von Milch").directive
    assert gone is not None
    services.directive_deactivate(user=user, directive_id=gone.pk)
    asked = _propose(api, action="create", text="Sprich nie über das Wetter")
    client = Client()
    client.force_login(user)

    with django_assert_max_num_queries(12):
        page = client.get("/regeln/")

    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("<h1") == 1 and "Deine Regeln" in html
    active, inactive = html.split('id="inaktiv-titel"')
    assert "Nenn mich Boss" in active and "Zusammenhang:" in active
    assert "„Nenn mich Chef“ (abgelöst)" in active  # the former wording in its history
    assert "Neue Fassung angelegt: „Nenn mich Boss“" in active
    assert "Sprich nie von Milch" in inactive and "Wieder aktivieren" in inactive
    assert "Sprich nie von Milch" not in active
    # The open question is shown word for word, ready for the consent click.
    assert f'data-pending="{asked["pending_id"]}"' in html
    assert asked["question"].replace("'", "&#x27;") in html


def test_the_page_says_sie_when_a_rule_demands_it(user: Any) -> None:
    services.directive_create(user=user, text="Sieze mich")
    client = Client()
    client.force_login(user)
    html = client.get("/regeln/").content.decode()
    assert "Ihre Regeln" in html and "Deine Regeln" not in html


def test_the_page_needs_a_login(client: Client) -> None:
    answer = client.get("/regeln/")
    assert answer.status_code == 302 and "/login/" in answer["Location"]


def test_a_choice_question_of_the_chat_is_not_offered_for_a_consent_click(
    user: Any, session: Any
) -> None:
    """A choice is answered by naming the rule; "Ja, so machen" could not answer it."""
    ctx = AgentContext(user=user, character=session.character, session=session, text="")
    choice = "Dazu passen mehrere Direktiven: [1] 'A', [2] 'B'. Welche soll ich entfernen?"
    DirectivesAgent()._ask(
        ctx,
        Proposal("delete", choice, {"action": "delete"}, kind=QuestionKind.CHOICE),
    )
    client = Client()
    client.force_login(user)
    html = client.get("/regeln/").content.decode()
    assert 'data-pending=""' in html and "Welche soll ich entfernen" not in html
