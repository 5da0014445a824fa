"""Celery tasks of the conversation. Thin: call one service."""

from __future__ import annotations

import logging

from celery import shared_task

from conversation.memory import memory_expire_due

logger = logging.getLogger(__name__)


@shared_task(name="conversation.tasks.memory_expire")
def memory_expire() -> int:
    """Beat entry (settings.CELERY_BEAT_SCHEDULE "conversation-memory-expire"): delete every
    expired short-term memory; returns how many were deleted."""
    deleted = memory_expire_due()
    logger.info("memory_expire deleted=%d", deleted, extra={"outcome": "geloescht"})
    return deleted
