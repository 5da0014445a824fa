"""REST: /api/directives/ — only the person's own rows; writes bi-temporal, audited, verified."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from directives import services
from directives.models import Directive, DirectiveStep

pytestmark = pytest.mark.django_db

SHAPE = {"id", "text", "context", "active", "created_at", "changed_at", "replaces"}


def test_post_creates_a_verified_audited_row(api: APIClient, user: Any) -> None:
    answer = api.post("/api/directives/", {"text": "Sprich nie von Milch"}, format="json")
    assert answer.status_code == 201
    body = answer.json()
    assert set(body) == SHAPE
    assert (body["text"], body["context"], body["active"], body["replaces"]) == (
        "Sprich nie von Milch",
        None,
        True,
        None,
    )
    steps = DirectiveStep.objects.filter(user=user, source="api").values_list("step", flat=True)
    assert list(steps) == ["ausgefuehrt", "verifiziert"]


def test_post_refuses_an_empty_text(api: APIClient) -> None:
    assert api.post("/api/directives/", {"text": ""}, format="json").status_code == 400
    assert not Directive.objects.exists()


def test_list_filters_active_and_shows_only_own_rows(
    api: APIClient, user: Any, other_user: Any, django_assert_max_num_queries: Any
) -> None:
    keep = services.directive_create(user=user, text="Sieze mich immer").directive
    gone = services.directive_create(user=user, text="Sag nie Schatz").directive
    assert keep is not None and gone is not None
    services.directive_deactivate(user=user, directive_id=gone.pk)
    services.directive_create(user=other_user, text="Fremde Regel")

    with django_assert_max_num_queries(4):
        all_rows = api.get("/api/directives/").json()
    active = api.get("/api/directives/?active=true").json()

    assert [r["text"] for r in all_rows] == ["Sieze mich immer", "Sag nie Schatz"]
    assert [r["id"] for r in active] == [keep.pk]
    assert [r["id"] for r in api.get("/api/directives/?active=FALSE").json()] == [gone.pk]
    assert [r["id"] for r in api.get("/api/directives/?active=1").json()] == [keep.pk]
    for word in ("vielleicht", "", "yes"):
        refused = api.get(f"/api/directives/?active={word}")
        assert refused.status_code == 400, word
        assert refused.json()["step"] == "filter_unlesbar"


def test_another_persons_id_answers_404_like_a_missing_one(api: APIClient, other_user: Any) -> None:
    foreign = services.directive_create(user=other_user, text="Fremde Regel").directive
    assert foreign is not None
    for url in (f"/api/directives/{foreign.pk}/", f"/api/directives/{foreign.pk}/history/"):
        assert api.get(url).status_code == 404
        assert api.get(url.replace(str(foreign.pk), str(foreign.pk + 9999))).status_code == 404
    assert (
        api.patch(f"/api/directives/{foreign.pk}/", {"text": "x"}, format="json").status_code == 404
    )
    answer = api.patch(f"/api/directives/{foreign.pk}/", {"active": False}, format="json")
    assert answer.status_code == 404
    assert api.delete(f"/api/directives/{foreign.pk}/").status_code == 404
    assert Directive.objects.get(pk=foreign.pk).active is True


def test_patch_text_is_bi_temporal_and_history_shows_the_chain(api: APIClient, user: Any) -> None:
    old = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert old is not None

    answer = api.patch(f"/api/directives/{old.pk}/", {"text": "Nenn mich Boss"}, format="json")

    assert answer.status_code == 200
    new = answer.json()
    assert new["replaces"] == old.pk and new["id"] != old.pk and new["text"] == "Nenn mich Boss"
    old.refresh_from_db()
    assert old.active is False and old.text == "Nenn mich Chef"
    history = api.get(f"/api/directives/{old.pk}/history/").json()
    assert [r["id"] for r in history["chain"]] == [old.pk, new["id"]]
    update_step = next(
        s for s in history["steps"] if s["step"] == "ausgefuehrt" and s["action"] == "update"
    )
    assert update_step["previous"]["text"] == "Nenn mich Chef"


def test_delete_deactivates_and_patch_active_reactivates(api: APIClient, user: Any) -> None:
    row = services.directive_create(user=user, text="Sieze mich immer").directive
    assert row is not None
    assert api.delete(f"/api/directives/{row.pk}/").status_code == 204
    assert Directive.objects.get(pk=row.pk).active is False  # history stays
    # A deleted rule stays readable (bi-temporal), and a second DELETE changes nothing.
    assert api.get(f"/api/directives/{row.pk}/").json()["active"] is False
    assert api.delete(f"/api/directives/{row.pk}/").status_code == 204
    answer = api.patch(f"/api/directives/{row.pk}/", {"active": True}, format="json")
    assert answer.status_code == 200 and answer.json()["active"] is True


def test_without_login_the_directives_api_refuses() -> None:
    assert APIClient().get("/api/directives/").status_code == 401
