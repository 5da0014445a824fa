"""Writes of the conversation app."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from conversation.models import Character, Session

DEFAULT_CHARACTER = "Nova"


def character_default() -> Character:
    """Nova, created by the data migration; a missing row is a deployment error, said loudly."""
    character = Character.objects.filter(name=DEFAULT_CHARACTER).first()
    if character is None:
        raise RuntimeError("Character 'Nova' missing: run `python manage.py migrate`")
    return character


@transaction.atomic
def session_create(*, user: User, character: Character | None = None, title: str = "") -> Session:
    return Session.objects.create(
        user=user, character=character or character_default(), title=title[:200]
    )


@transaction.atomic
def session_ensure(*, user: User) -> Session:
    """The person's latest conversation, or her first one when she has none."""
    latest = Session.objects.filter(user=user).order_by("-updated_at").first()
    return latest or session_create(user=user)
