"""Celery tasks of the return path. Thin: take ids, call the service.

``acks_late`` + ``reject_on_worker_lost``: a worker killed mid-run gives the message back; the
run is idempotent per memory (one deciding row, edits found again by their intent), so the
redelivery completes what the dead run began and never writes twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from knowledge.rueckweg import rueckweg_for_memory
from knowledge.selectors import memories_pending_rueckweg


@shared_task(name="knowledge.tasks.rueckweg_memory", acks_late=True, reject_on_worker_lost=True)
def rueckweg_memory(memory_entry_id: int) -> dict[str, Any]:
    result = rueckweg_for_memory(memory_entry_id=memory_entry_id)
    return {"memory_id": result.memory_id, "outcome": result.outcome, "step": result.step}


@shared_task(name="knowledge.tasks.rueckweg_pending", acks_late=True)
def rueckweg_pending_task() -> list[int]:
    """Beat entry: one task per promoted memory still waiting for its decision."""
    ids = memories_pending_rueckweg()
    for memory_id in ids:
        rueckweg_memory.delay(memory_id)
    return ids
