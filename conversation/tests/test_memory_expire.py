"""Expired short-term memories are deleted by the beat job, not only filtered out of searches."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from conversation.models import Character, MemoryEntry
from tests.factories import UserFactory

VECTOR = [1.0] + [0.0] * 383


def _memory(user: Any, nova: Character, text: str, **fields: Any) -> MemoryEntry:
    return MemoryEntry.objects.create(
        user=user, character=nova, text=text, embedding=VECTOR, **fields
    )


def _beat_entry() -> dict[str, Any]:
    entries = [
        e
        for e in settings.CELERY_BEAT_SCHEDULE.values()
        if e["task"] == "conversation.tasks.memory_expire"
    ]
    assert len(entries) == 1, settings.CELERY_BEAT_SCHEDULE
    return entries[0]


def test_beat_schedules_the_registered_task() -> None:
    from novaberg.celery import app

    entry = _beat_entry()
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert float(entry["schedule"]) == settings.MEMORY_EXPIRE_EVERY_S


@pytest.mark.django_db(transaction=True)
def test_the_worker_deletes_expired_short_term_memories_of_every_pair(
    celery_worker_proc: Any,
) -> None:
    from novaberg.celery import app

    nova = Character.objects.get(name="Nova")
    anna, bert = UserFactory(username="anna"), UserFactory(username="bert")
    past = timezone.now() - timedelta(minutes=1)
    future = timezone.now() + timedelta(days=3)
    gone = [
        _memory(anna, nova, "Ich fahre morgen nach Ulm.", expires_at=past).pk,
        _memory(bert, nova, "Mein Termin ist am Montag.", expires_at=past).pk,
    ]
    kept = [
        _memory(anna, nova, "Mein Hund heißt Bello.", expires_at=future).pk,
        # Long-term memory: promoted, no expiry, never deleted by this job.
        _memory(anna, nova, "Ich bin Töpferin.", kind=MemoryEntry.Kind.LONG, expires_at=None).pk,
    ]

    # The beat entry's own task name, through the broker to the real worker.
    result = app.send_task(_beat_entry()["task"])
    assert result.get(timeout=60) == 2

    assert sorted(MemoryEntry.objects.values_list("pk", flat=True)) == sorted(kept)
    assert not MemoryEntry.objects.filter(pk__in=gone).exists()
    # A second run finds nothing more.
    assert app.send_task(_beat_entry()["task"]).get(timeout=60) == 0
