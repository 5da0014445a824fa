"""Celery tasks of the conversation. Thin: call one service."""

from __future__ import annotations

import logging

from celery import shared_task

from conversation.memory import memory_expire_due
from conversation.reaper import turns_reap

logger = logging.getLogger(__name__)


@shared_task(name="conversation.tasks.memory_expire")
def memory_expire() -> int:
    """Beat entry (settings.CELERY_BEAT_SCHEDULE "conversation-memory-expire"): delete every
    expired short-term memory; returns how many were deleted."""
    deleted = memory_expire_due()
    logger.info("memory_expire deleted=%d", deleted, extra={"outcome": "geloescht"})
    return deleted


@shared_task(name="conversation.tasks.reap_turns")
def reap_turns() -> list[dict[str, object]]:
    """Beat entry (settings.CELERY_BEAT_SCHEDULE "conversation-reap-turns"): close the turns
    left ``laufend`` by a dead web process as ``unterbrochen`` (conversation/reaper.py)."""
    return [{"turn_id": r.turn_id, "step": r.step} for r in turns_reap()]
