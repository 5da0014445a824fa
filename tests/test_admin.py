"""Every model in the admin renders its list (columns and filters) and its change form."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from conversation.pipeline import run_turn

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(session: Any, user: Any) -> Client:
    # Some data, so list columns and change forms have rows to render.
    run_turn(user=user, character=session.character, session=session, text="Hallo Nova")
    boss = get_user_model().objects.create_superuser("chefin", "chefin@example.org", "geheim123")
    client = Client()
    client.force_login(boss)
    return client


def test_every_registered_model_lists_and_opens(staff_client: Client) -> None:
    labels = []
    for model, model_admin in admin.site._registry.items():
        meta = model._meta
        listing = staff_client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert listing.status_code == 200, meta.label
        if model_admin.list_filter:
            assert b'id="changelist-filter"' in listing.content, meta.label
        first = model.objects.first()
        if first is not None:
            change = staff_client.get(
                reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk])
            )
            assert change.status_code == 200, meta.label
        labels.append(meta.label)
    assert {"conversation.Turn", "conversation.PipelineLog", "conversation.PendingQuestion"} <= set(
        labels
    )
