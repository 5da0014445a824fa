"""Celery tasks of the watcher. Thin: take ids, call the run.

``acks_late`` + ``reject_on_worker_lost``: a worker killed mid-run gives the message back, and
the run is idempotent (each file commits on its own; the rerun finishes the rest). The per-root
advisory lock inside ``index_root_run`` keeps two runs (beat overlapping a manual one, or a
redelivered message) from indexing the same root at once.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from files.models import FileRoot
from files.watcher import index_root_run


@shared_task(name="files.tasks.index_root", acks_late=True, reject_on_worker_lost=True)
def index_root(root_id: int, full_hash: bool | None = None) -> dict[str, Any]:
    return index_root_run(root_id=root_id, full_hash=full_hash).as_json()


@shared_task(name="files.tasks.index_all_roots", acks_late=True)
def index_all_roots() -> list[int]:
    """Beat entry: one index task per active root."""
    ids = list(FileRoot.objects.filter(state=FileRoot.State.ACTIVE).values_list("pk", flat=True))
    for root_id in ids:
        index_root.delay(root_id)
    return ids
