"""Issue 28: offline, what a person wants done to which rule, over the real chat path.

Every sentence: the confirmation question names the action and the rule, "ja" changes the
database as meant, "nein" changes nothing. Each test also checks that the understanding layer
routed the sentence to the directives agent; the agent's own reading of it is proven without
routing in test_rule_objects.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import PipelineLog, Session
from directives import services
from directives.models import Directive, DirectiveStep
from directives.tests.helpers import say
from directives.tribunal import demanded_form, forbidden_terms

pytestmark = pytest.mark.django_db


def _active(user: Any) -> set[str]:
    return set(Directive.objects.filter(user=user, active=True).values_list("text", flat=True))


def _rule(user: Any, text: str, *, active: bool = True) -> int:
    row = services.directive_create(user=user, text=text).directive
    assert row is not None
    if not active:
        services.directive_deactivate(user=user, directive_id=row.pk)
    return row.pk


def _ask(api: APIClient, session: Session, text: str) -> dict[str, Any]:
    asked = say(api, session, text)
    route = PipelineLog.objects.filter(turn_id=int(asked["turn_id"]), node="router").first()
    assert route is None or "directives" in str(route.outcome) + str(route.details), (
        f"not routed to the directives agent: {route.outcome if route else None}"
    )
    assert asked["status"] == "rueckfrage", asked
    return asked


# -- changes ------------------------------------------------------------------------------------

CHANGES = [
    pytest.param(
        "Keine Emojis verwenden",
        "Ändere die Emoji-Regel so, dass auch keine Smileys erlaubt sind.",
        "Keine Emojis verwenden, auch keine Smileys",
        id="emoji-smileys",
    ),
    pytest.param(
        "Den Nutzer immer siezen",
        "Mach aus der Siez-Regel eine Duz-Regel.",
        "Den Nutzer duzen",
        id="siez-to-duz",
    ),
    pytest.param(
        "Nutzer nicht Schatz nennen",
        "Ändere die Regel mit Schatz: auch nicht Hase",
        "Nutzer nicht Schatz nennen, auch nicht Hase",
        id="schatz-hase",
    ),
    pytest.param(
        "Verzichte auf Anglizismen",
        "Korrigiere die Regel über Anglizismen: auch keine Fachbegriffe.",
        "Verzichte auf Anglizismen, auch keine Fachbegriffe",
        id="anglizismen",
    ),
]


@pytest.mark.parametrize(("old", "text", "new"), CHANGES)
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_change_replaces_the_named_rule(
    api: APIClient, session: Session, user: Any, old: str, text: str, new: str, answer: str
) -> None:
    old_id = _rule(user, old)
    _rule(user, "Sprich nie von Milch")

    asked = _ask(api, session, text)

    assert asked["question"] == (
        f"Ich soll die Direktive '{old}' durch '{new}' ersetzen. Soll ich das so machen?"
    )
    say(api, session, answer)
    if answer == "ja":
        assert _active(user) == {new, "Sprich nie von Milch"}
        assert Directive.objects.get(user=user, text=new).replaces_id == old_id
    else:
        assert _active(user) == {old, "Sprich nie von Milch"}


def test_a_changed_rules_new_word_is_withheld(api: APIClient, session: Session, user: Any) -> None:
    _rule(user, "Nutzer nicht Schatz nennen")
    _ask(api, session, "Ändere die Regel mit Schatz: auch nicht Hase")
    say(api, session, "ja")
    (text,) = _active(user)
    assert {"Schatz", "Hase"} <= set(forbidden_terms(text))
    from directives.tribunal import terms_for

    assert {"Schatz", "Hase"} <= {term for _rule_text, term in terms_for(user=user)}


# -- deletes ------------------------------------------------------------------------------------

DELETES = [
    pytest.param(
        "Nenn mich nie Kumpel",
        "Die Kumpel-Regel brauchst du nicht mehr.",
        id="kumpel",
    ),
    pytest.param("Den Nutzer immer siezen", "Lösch die Regel mit Sie.", id="sie"),
    pytest.param("Sag Sie zu mir", "Lösch die Regel mit Sie.", id="sie-as-said"),
]


@pytest.mark.parametrize(("rule", "text"), DELETES)
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_delete_removes_the_named_rule(
    api: APIClient, session: Session, user: Any, rule: str, text: str, answer: str
) -> None:
    _rule(user, rule)
    _rule(user, "Sprich nie von Milch")

    asked = _ask(api, session, text)

    assert asked["question"] == (
        f"Ich soll die Direktive '{rule}' entfernen. Soll ich das so machen?"
    )
    say(api, session, answer)
    expected = {"Sprich nie von Milch"} | (set() if answer == "ja" else {rule})
    assert _active(user) == expected


RULES = ["Sprich nie von Milch", "Keine Emojis verwenden", "Den Nutzer immer siezen"]


@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_delete_all_asks_once_naming_every_rule(
    api: APIClient, session: Session, user: Any, answer: str
) -> None:
    ids = [_rule(user, text) for text in RULES]

    asked = _ask(api, session, "Lösch alle meine Regeln.")

    assert asked["question"] == (
        "Ich soll diese 3 Direktiven entfernen: 'Sprich nie von Milch', "
        "'Keine Emojis verwenden' und 'Den Nutzer immer siezen'. Soll ich das so machen?"
    )
    done = say(api, session, answer)
    if answer == "nein":
        assert _active(user) == set(RULES)
        assert not DirectiveStep.objects.filter(step="ausgefuehrt", action="delete").exists()
        return
    assert done["status"] == "abgeschlossen"
    assert _active(user) == set()
    for directive_id in ids:  # each with its audit step, read back like a single delete
        steps = DirectiveStep.objects.filter(directive_id=directive_id, action="delete")
        assert set(steps.values_list("step", flat=True)) >= {"ausgefuehrt", "verifiziert"}
        assert steps.get(step="verifiziert").pending_id is not None


def test_undo_after_delete_all_brings_every_rule_back(
    api: APIClient, session: Session, user: Any
) -> None:
    for text in RULES:
        _rule(user, text)
    _ask(api, session, "Lösch alle meine Regeln.")
    say(api, session, "ja")

    asked = _ask(api, session, "Mach die letzte Änderung rückgängig")

    for text in RULES:
        assert f"'{text}'" in asked["question"]
    say(api, session, "ja")
    assert _active(user) == set(RULES)


# -- reactivations ------------------------------------------------------------------------------

REACTIVATIONS = [
    pytest.param("Die Emoji-Regel soll wieder gelten.", id="soll-wieder-gelten"),
    pytest.param("Bring die Regel mit den Emojis zurück.", id="bring-zurueck"),
    pytest.param("Aktivier die gelöschte Regel wieder.", id="die-geloeschte"),
]


@pytest.mark.parametrize("text", REACTIVATIONS)
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_reactivation_restores_the_deleted_rule(
    api: APIClient, session: Session, user: Any, text: str, answer: str
) -> None:
    _rule(user, "Sprich nie von Milch")
    _rule(user, "Keine Emojis verwenden", active=False)

    asked = _ask(api, session, text)

    assert asked["question"] == (
        "Ich soll die Direktive 'Keine Emojis verwenden' wiederherstellen. Soll ich das so machen?"
    )
    say(api, session, answer)
    expected = {"Sprich nie von Milch"} | ({"Keine Emojis verwenden"} if answer == "ja" else set())
    assert _active(user) == expected
    assert Directive.objects.filter(user=user).count() == 2  # never a new row


# -- forms of address ---------------------------------------------------------------------------

ADDRESS = [
    pytest.param("Sprich mich ab jetzt mit Sie an", "sie", id="mit-sie"),
    pytest.param("Sag Sie zu mir", "sie", id="sag-sie"),
    pytest.param("Bitte förmlich", "sie", id="foermlich"),
    pytest.param("Nicht mehr duzen", "sie", id="nicht-mehr-duzen"),
    pytest.param("Sprich mich mit du an", "du", id="mit-du"),
    pytest.param("Sag ruhig du zu mir", "du", id="sag-du"),
    pytest.param("nicht mehr siezen", "du", id="nicht-mehr-siezen"),
]
ADDRESS_RULES = {"sie": "Den Nutzer immer siezen", "du": "Den Nutzer duzen"}


@pytest.mark.parametrize(("text", "form"), ADDRESS)
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_form_of_address_as_people_say_it(
    api: APIClient, session: Session, user: Any, text: str, form: str, answer: str
) -> None:
    from conversation.address import address_form

    asked = _ask(api, session, text)

    rule = ADDRESS_RULES[form]
    assert asked["question"] == f"Ich soll die Direktive '{rule}' anlegen. Soll ich das so machen?"
    say(api, session, answer)
    if answer == "ja":
        assert _active(user) == {rule}
        assert demanded_form(rule) == form
        assert address_form(user).value == form
    else:
        assert not Directive.objects.exists()
        assert address_form(user).value == "du"
