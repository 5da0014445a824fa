"""Celery tasks of the knowledge app. Thin: take ids, call the service.

``acks_late`` + ``reject_on_worker_lost``: a worker killed mid-run gives the message back; the
run is idempotent per memory (one deciding row, edits found again by their intent), so the
redelivery completes what the dead run began and never writes twice.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from knowledge.rueckweg import rueckweg_for_memory
from knowledge.scan import pairs_to_scan, zone_scan_pair
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


def enqueue_promoted(ids: list[int]) -> None:
    """The promotion listener (``conversation.memory.on_promoted``), called after the commit
    that promoted ``ids``: one return-path run per memory. A broker that is down raises here;
    conversation logs it by name and beat's ``rueckweg_pending`` picks the memories up."""
    for memory_id in ids:
        rueckweg_memory.delay(int(memory_id))


@shared_task(name="knowledge.tasks.zone_scan", acks_late=True)
def zone_scan_task(user_id: int, character_id: int) -> dict[str, Any] | None:
    report = zone_scan_pair(user_id=user_id, character_id=character_id)
    return report.as_json() if report is not None else None


@shared_task(name="knowledge.tasks.zone_scan_all", acks_late=True)
def zone_scan_all() -> list[list[int]]:
    """Beat entry: one scan per pair with a zone folder or library rows."""
    pairs = pairs_to_scan()
    for user_id, character_id in pairs:
        zone_scan_task.delay(user_id, character_id)
    return [list(p) for p in pairs]
