"""The person's form of address, as the directives demand it, for every text Nova sends."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from conversation.address import AddressForm, address_form, for_person, to_sie
from directives import services

pytestmark = pytest.mark.django_db


def test_without_a_rule_nova_says_du(user: User) -> None:
    assert address_form(user) is AddressForm.DU
    assert for_person("Deine Nachricht ist leer.", user=user) == "Deine Nachricht ist leer."


@pytest.mark.parametrize(
    "rule", ["Sieze mich immer", "Den Nutzer immer siezen", "Ab sofort bitte siezen"]
)
def test_a_sie_rule_turns_novas_own_texts_into_sie(user: User, rule: str) -> None:
    services.directive_create(user=user, text=rule)
    assert address_form(user) is AddressForm.SIE
    assert for_person("Hast du deine Regeln gesehen?", user=user) == (
        "Haben Sie Ihre Regeln gesehen?"
    )
    # An imperative the rewrite cannot know passes its Sie wording explicitly.
    assert for_person("Schreib mir.", user=user, sie="Schreiben Sie mir.") == "Schreiben Sie mir."


def test_the_newest_rule_about_the_form_wins(user: User) -> None:
    services.directive_create(user=user, text="Sieze mich immer")
    services.directive_create(user=user, text="Duze mich ab jetzt")
    assert address_form(user) is AddressForm.DU


def test_a_negated_rule_demands_nothing(user: User) -> None:
    services.directive_create(user=user, text="Sieze mich nie")
    assert address_form(user) is AddressForm.DU


def test_another_persons_rule_does_not_count(user: User, other_user: User) -> None:
    services.directive_create(user=other_user, text="Sieze mich immer")
    assert address_form(user) is AddressForm.DU


def test_an_inactive_rule_does_not_count(user: User) -> None:
    row = services.directive_create(user=user, text="Sieze mich immer").directive
    assert row is not None
    services.directive_deactivate(user=user, directive_id=row.pk)
    assert address_form(user) is AddressForm.DU


def test_to_sie_rewrites_pronouns_and_the_verb_beside_du() -> None:
    assert to_sie("Kannst du mir helfen? Dein Ordner ist da.") == (
        "Können Sie mir helfen? Ihr Ordner ist da."
    )
