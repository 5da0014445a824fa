"""Writes of the conversation app."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
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
def session_create(
    *, user: AbstractBaseUser, character: Character | None = None, title: str = ""
) -> Session:
    return Session.objects.create(
        user=user, character=character or character_default(), title=title[:200]
    )
