from __future__ import annotations

from celery import shared_task


@shared_task(name="novaberg.ping")
def ping() -> str:
    """Round trip through broker and worker, used by /healthz and the tests."""
    return "pong"
