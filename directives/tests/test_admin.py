"""Admin: directives with their history chain and steps, filterable by person and state."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from directives import services
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_admin_shows_the_history_chain_and_filters(user: Any, client: Client) -> None:
    admin = UserFactory.create(username="admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    old = services.directive_create(user=user, text="Nenn mich Chef").directive
    assert old is not None
    new = services.directive_update(user=user, directive_id=old.pk, text="Nenn mich Boss")
    assert new.directive is not None

    page = client.get(f"/admin/directives/directive/{new.directive.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.index(f"#{old.pk} inaktiv — Nenn mich Chef") < html.index(
        f"#{new.directive.pk} aktiv — Nenn mich Boss"
    )
    assert "verifiziert" in html  # the steps inline

    listing = client.get("/admin/directives/directive/?active__exact=1")
    assert listing.status_code == 200
    assert [row.text for row in listing.context["cl"].result_list] == ["Nenn mich Boss"]
    assert client.get("/admin/directives/directivestep/").status_code == 200
