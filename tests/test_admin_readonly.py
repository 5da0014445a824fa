"""The admin shows history and never rewrites it: messages, the pipeline's log, directive rows,
their audit steps and the stored confirmation questions cannot be added, changed or deleted
there. Every model carries a German name with its plural; a message links to its inspector;
no internal note is shown as help text."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib import admin
from django.core.management import call_command
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from conversation.models import PendingQuestion, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from directives import services
from directives.models import Directive, DirectiveStep
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

HELP_RE = re.compile(r'<div class="help"[^>]*>(.*?)</div>', re.DOTALL)

HISTORY = [Turn, PipelineLog, Directive, DirectiveStep, PendingQuestion]


@pytest.fixture
def staff(user: Any, session: Session) -> Client:
    run_turn(user=user, character=session.character, session=session, text="Hallo Nova")
    run_turn(
        user=user, character=session.character, session=session, text="Sprich nie von Milch"
    )  # a directives question: a PendingQuestion and its steps
    made = services.directive_create(user=user, text="Sieze mich")
    assert made.directive is not None
    boss = UserFactory.create(username="chefin", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(boss)
    return client


def _url(model: type[Model], view: str, *args: Any) -> str:
    meta = model._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", HISTORY, ids=lambda m: m.__name__)
def test_history_cannot_be_added_changed_or_deleted(staff: Client, model: type[Model]) -> None:
    row = model._default_manager.order_by("pk").first()
    assert row is not None, model.__name__
    before = model._default_manager.filter(pk=row.pk).values().get()

    assert staff.get(_url(model, "add")).status_code == 403
    view = staff.get(_url(model, "change", row.pk))
    assert view.status_code == 200  # shown, as a view
    html = view.content.decode()
    assert 'name="_save"' not in html
    assert _url(model, "delete", row.pk) not in html
    assert staff.post(_url(model, "change", row.pk), {}).status_code == 403
    assert staff.post(_url(model, "delete", row.pk), {"post": "yes"}).status_code == 403
    listing = staff.get(_url(model, "changelist")).content.decode()
    assert _url(model, "add") not in listing
    assert 'name="action"' not in listing or "delete_selected" not in listing

    assert model._default_manager.filter(pk=row.pk).values().get() == before


def test_a_conversation_cannot_be_deleted_with_its_history(staff: Client, session: Session) -> None:
    answer = staff.post(_url(Session, "delete", session.pk), {"post": "yes"})
    assert answer.status_code == 403
    assert Turn.objects.filter(session=session).exists()


def test_every_model_has_a_german_name_and_plural(staff: Client) -> None:
    names = {
        model._meta.label: (str(model._meta.verbose_name), str(model._meta.verbose_name_plural))
        for model in admin.site._registry
    }
    assert names["conversation.Turn"] == ("Nachricht", "Nachrichten")
    assert names["conversation.PipelineLog"] == ("Ablaufschritt", "Ablaufschritte")
    assert names["conversation.PendingQuestion"] == ("Rückfrage", "Rückfragen")
    assert names["conversation.Session"] == ("Gespräch", "Gespräche")
    assert names["directives.Directive"] == ("Direktive", "Direktiven")
    assert names["directives.DirectiveStep"] == ("Protokollschritt", "Protokollschritte")
    assert names["files.FileRoot"] == ("freigegebener Ordner", "freigegebene Ordner")
    assert names["files.IndexEntry"] == ("Indexeintrag", "Indexeinträge")
    for label, (one, many) in names.items():
        if label.startswith(("auth.", "authtoken.")):
            continue  # Django's and DRF's own, translated by them
        # Django's fallback is the class name in lower case plus an "s".
        assert one != label.split(".")[1].lower(), label
        assert many != f"{one}s", label
    index = staff.get("/admin/").content.decode()
    for plural in ("Nachrichten", "Direktiven", "Protokollschritte", "freigegebene Ordner"):
        assert plural.lower() in index.lower(), plural


def test_no_internal_notes_as_help_text(staff: Client) -> None:
    for model in admin.site._registry:
        if model._meta.app_label == "auth":
            continue
        row = model._default_manager.order_by("pk").first()
        pages = [_url(model, "add")]
        if row is not None:
            pages.append(_url(model, "change", row.pk))
        for url in pages:
            answer = staff.get(url)
            if answer.status_code == 403:
                continue  # no add form for history
            helps = HELP_RE.findall(answer.content.decode())
            for text in helps:
                # Internal notes: a seed reference or a prompt block name like [IDENTITAET].
                assert "seed" not in text and "[" not in text, (url, text)
            if model._meta.label == "conversation.Character":
                assert len(helps) == 3, helps


def test_a_message_links_to_its_inspector(staff: Client, session: Session) -> None:
    asked = Turn.objects.filter(session=session, role=Turn.Role.USER).order_by("pk").first()
    assert asked is not None
    reply = Turn.objects.get(reply_to=asked)
    inspector = reverse("turn-inspector", args=[asked.pk])
    for turn in (asked, reply):
        html = staff.get(_url(Turn, "change", turn.pk)).content.decode()
        assert f'href="{inspector}"' in html, turn.role
    assert f'href="{inspector}"' in staff.get(_url(Turn, "changelist")).content.decode()


def test_the_german_names_need_no_migration() -> None:
    # The conversation models get their names in the admin, not in Meta: the migration state
    # must not see a change (makemigrations --check exits non-zero if it does).
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)
