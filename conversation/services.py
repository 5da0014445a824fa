"""Writes of the conversation app."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from conversation.models import Character, Session
from novaberg.api_errors import ApplicationError, NotFoundError

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


TITLE_MAX_CHARS = 200


@transaction.atomic
def session_rename(*, user: User, session_id: int, title: str) -> Session:
    """Gives the person's chat her own title; a blank title brings the automatic one back.
    Raises ``NotFoundError`` for a missing or another person's chat, ``ApplicationError`` for
    a title that is too long or holds control characters. The list order stays: renaming is
    not news in the conversation (``updated_at`` is not written)."""
    session = Session.objects.select_for_update().filter(pk=session_id, user=user).first()
    if session is None:
        raise NotFoundError("Dieses Gespräch gibt es nicht.", step="gespraech_unbekannt")
    clean = " ".join(title.split())
    if len(clean) > TITLE_MAX_CHARS:
        raise ApplicationError(
            f"Der Titel darf höchstens {TITLE_MAX_CHARS} Zeichen lang sein.", step="titel_zu_lang"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in clean):
        raise ApplicationError(
            "Der Titel darf keine Steuerzeichen enthalten.", step="titel_unlesbar"
        )
    Session.objects.filter(pk=session.pk).update(title=clean)
    session.refresh_from_db(fields=["title"])
    if session.title != clean:
        raise ApplicationError("Der Titel wurde nicht gespeichert.", step="nicht_gespeichert")
    return session


@transaction.atomic
def session_delete(*, user: User, session_id: int) -> None:
    """Deletes the person's chat with its messages, their pipeline rows and open questions.
    What Nova remembered from it (memories, rules, her library) stays: those rows only lose
    the link to the chat. Raises ``NotFoundError`` for a missing or another person's chat."""
    deleted, _ = Session.objects.filter(pk=session_id, user=user).delete()
    if not deleted:
        raise NotFoundError("Dieses Gespräch gibt es nicht.", step="gespraech_unbekannt")
    if Session.objects.filter(pk=session_id).exists():
        raise ApplicationError("Das Gespräch wurde nicht gelöscht.", step="nicht_geloescht")
