"""The trigger (seed 004 v0.14: the promotion is the proof): a memory promoted to long-term
memory enqueues the return path on commit, and a real worker runs it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from conversation import memory
from conversation.models import MemoryEntry, Session
from knowledge.models import RueckwegRun
from knowledge.tests.factories import TurnFactory
from novaberg import embeddings

TEXT = "Mein Nachbar züchtet seit Jahren Bienen auf dem Dach der alten Scheune."


def test_knowledge_listens_for_promotions() -> None:
    assert "knowledge" in memory._PROMOTION_LISTENERS


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_promotion_enqueues_the_return_path_on_commit(
    celery_worker_proc: Any, session: Session, user: Any
) -> None:
    turn = TurnFactory.create(session=session, text=TEXT)
    entry = MemoryEntry.objects.create(
        user=user,
        character=session.character,
        session=session,
        source_turn=turn,
        kind=MemoryEntry.Kind.SHORT,
        text=TEXT,
        embedding=embeddings.embed_one(TEXT),
        salience=0.75,
    )
    assert memory.memory_recall(user=user, character=session.character, ids=[entry.pk]) == [
        entry.pk
    ]
    deadline = time.monotonic() + 90
    while not (run := RueckwegRun.objects.filter(memory_key=entry.pk).first()):
        assert time.monotonic() < deadline, "no return-path run for the promoted memory"
        time.sleep(0.2)
    # Her library is empty: a full outcome with its reason, decided once.
    assert (run.outcome, run.abschliessend) == ("keine_passende_datei", True)
    assert run.reason


@pytest.mark.django_db
def test_a_recall_without_promotion_enqueues_nothing(
    session: Session, user: Any, django_capture_on_commit_callbacks: Any
) -> None:
    entry = MemoryEntry.objects.create(
        user=user,
        character=session.character,
        kind=MemoryEntry.Kind.SHORT,
        text=TEXT,
        embedding=embeddings.embed_one(TEXT),
        salience=0.4,
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert memory.memory_recall(user=user, character=session.character, ids=[entry.pk]) == []
    assert callbacks == []
