from __future__ import annotations

import factory
from django.utils import timezone

from conversation.models import MemoryEntry, Turn
from conversation.vocabulary import Status
from tests.factories import SessionFactory


class TurnFactory(factory.django.DjangoModelFactory[Turn]):
    class Meta:
        model = Turn

    session = factory.SubFactory(SessionFactory)
    role = Turn.Role.USER
    text = "Ich habe heute etwas gelernt."
    status = Status.DONE


class MemoryEntryFactory(factory.django.DjangoModelFactory[MemoryEntry]):
    """A memory promoted to long-term memory, reached through its turn."""

    class Meta:
        model = MemoryEntry

    source_turn = factory.SubFactory(TurnFactory)
    session = factory.LazyAttribute(lambda o: o.source_turn.session)
    user = factory.LazyAttribute(lambda o: o.source_turn.session.user)
    character = factory.LazyAttribute(lambda o: o.source_turn.session.character)
    kind = MemoryEntry.Kind.LONG
    text = factory.LazyAttribute(lambda o: o.source_turn.text)
    salience = 0.8
    promoted_at = factory.LazyFunction(timezone.now)
    expires_at = None


def promoted(session: object, raw: str, **kw: object) -> MemoryEntry:
    """A promoted memory whose turn holds ``raw`` (the stored text may be shorter)."""
    turn = TurnFactory.create(session=session, text=raw)
    return MemoryEntryFactory.create(source_turn=turn, **kw)
