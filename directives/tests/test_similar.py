"""Seed 000 §6.2 has two questions: the same rule in other words → "Existiert bereits.
Aktualisieren?"; a similar rule → "… Trotzdem anlegen?", and similar rules may coexist."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from directives import services
from directives.agent.validate import is_same_rule, is_similar
from directives.models import Directive
from directives.tests.helpers import say


@pytest.mark.parametrize(
    ("old", "new", "same", "similar"),
    [
        pytest.param("Sprich nie von Milch.", "Erwähne nie Milch", True, True, id="other-verb"),
        pytest.param("Sieze mich immer", "Sieze mich bitte immer", True, True, id="bitte"),
        pytest.param(
            "Sprich nie von Milch", "Sprich nie von Milch und Käse", False, True, id="wider"
        ),
        pytest.param("Sprich nie von Milch", "Sprich nie von Käse", False, False, id="other"),
    ],
)
def test_same_rule_and_similar_rule_are_told_apart(
    old: str, new: str, same: bool, similar: bool
) -> None:
    assert is_same_rule(old, new) is same and is_same_rule(new, old) is same
    assert is_similar(old, new) is similar


@pytest.mark.django_db
@pytest.mark.parametrize("answer", ["ja", "nein"])
def test_a_similar_rule_asks_trotzdem_anlegen_and_may_coexist(
    api: APIClient, session: Any, user: Any, answer: str
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")

    asked = say(api, session, "Sprich nie von Milch und Käse")

    assert asked["status"] == "rueckfrage"
    assert asked["question"] == (
        "Es gibt schon die ähnliche Direktive 'Sprich nie von Milch'. "
        "Trotzdem 'Sprich nie von Milch und Käse' anlegen?"
    )
    say(api, session, answer)
    texts = set(Directive.objects.filter(user=user, active=True).values_list("text", flat=True))
    expected = {"Sprich nie von Milch"}
    if answer == "ja":
        expected.add("Sprich nie von Milch und Käse")
    assert texts == expected
    # Nothing was replaced: the old rule is the same row, still active.
    assert Directive.objects.filter(user=user).count() == len(expected)
