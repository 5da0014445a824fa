"""Writes: bi-temporal, verified by reading back, keine_zeile, idempotent by pending id."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest

from directives import selectors, services
from directives.agent.classify import Classification
from directives.agent.validate import not_found_text, validate
from directives.blocks import directives_block
from directives.models import Directive, DirectiveStep

pytestmark = pytest.mark.django_db


def test_a_write_that_hits_no_row_ends_with_keine_zeile(user: Any) -> None:
    row = services.directive_create(user=user, text="Sag nie Schatz").directive
    assert row is not None
    services.directive_deactivate(user=user, directive_id=row.pk)

    again = services.directive_deactivate(user=user, directive_id=row.pk)
    update = services.directive_update(user=user, directive_id=row.pk, text="Sag nie Hase")

    assert (again.ok, again.step) == (False, "keine_zeile")
    assert (update.ok, update.step) == (False, "keine_zeile")
    assert Directive.objects.filter(user=user).count() == 1  # update created nothing


def test_another_persons_row_is_never_written(user: Any, other_user: Any) -> None:
    foreign = services.directive_create(user=other_user, text="Sag nie Schatz").directive
    assert foreign is not None
    outcome = services.directive_deactivate(user=user, directive_id=foreign.pk)
    assert (outcome.ok, outcome.step) == (False, "keine_zeile")
    assert Directive.objects.get(pk=foreign.pk).active is True


def test_foreign_and_missing_ids_give_the_same_answer(user: Any, other_user: Any) -> None:
    foreign = services.directive_create(user=other_user, text="Sag nie Schatz").directive
    assert foreign is not None

    def answer(target_id: int) -> tuple[str, str, str]:
        c = Classification(action="delete", target_id=target_id)
        result = validate(user=user, classification=c, request_id="r").result
        assert result is not None
        return result.status, result.step, result.text

    assert answer(foreign.pk) == answer(foreign.pk + 10_000)
    assert answer(foreign.pk)[2] == not_found_text("delete")


def test_an_unverified_write_is_rolled_back_and_reported(user: Any) -> None:
    real_filter = Directive.objects.filter

    def lying_filter(*args: Any, **kwargs: Any) -> Any:
        rows = real_filter(*args, **kwargs)
        if set(kwargs) == {"user", "pk"}:
            return rows.none()  # the read-back finds nothing
        return rows

    with mock.patch.object(Directive.objects, "filter", side_effect=lying_filter):
        outcome = services.directive_create(user=user, text="Sprich nie von Milch")

    assert (outcome.ok, outcome.step) == (False, "verifikation")
    assert not Directive.objects.exists()  # nothing half-written
    failed = DirectiveStep.objects.get(user=user)
    assert (failed.step, failed.outcome) == ("fehlgeschlagen", "verifikation")


def test_a_confirmed_write_is_idempotent_by_pending_question(user: Any) -> None:
    first = services.directive_create(user=user, text="Sprich nie von Milch", pending_id=41)
    second = services.directive_create(user=user, text="Sprich nie von Milch", pending_id=41)
    assert first.ok and second.ok
    assert second.step == "schon_ausgefuehrt"
    assert Directive.objects.count() == 1


def test_empty_and_oversized_texts_are_refused_by_name(user: Any) -> None:
    assert services.directive_create(user=user, text="   ").step == "anweisung_leer"
    assert services.directive_create(user=user, text="x" * 501).step == "anweisung_zu_lang"
    assert not Directive.objects.exists()


def test_the_block_loads_all_active_directives_in_one_query(
    user: Any, django_assert_num_queries: Any
) -> None:
    for n in range(30):
        services.directive_create(user=user, text=f"Regel {n}")
    with django_assert_num_queries(1):
        block = directives_block(user=user)
    assert block.startswith("[DIREKTIVEN]\n")
    assert all(f"- Regel {n}\n" in block + "\n" for n in range(30))


def test_the_block_is_empty_without_active_directives(user: Any) -> None:
    assert directives_block(user=user) == ""


def test_history_chain_follows_replaces(user: Any) -> None:
    a = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert a is not None
    b = services.directive_update(user=user, directive_id=a.pk, text="Nenn mich Boss").directive
    assert b is not None
    c = services.directive_update(user=user, directive_id=b.pk, text="Nenn mich Anna").directive
    assert c is not None
    chain = selectors.directive_chain(user=user, directive_id=b.pk)
    assert [r.pk for r in chain or []] == [a.pk, b.pk, c.pk]
