"""Celery tasks of the watcher. Thin: take ids, call the run.

``acks_late`` + ``reject_on_worker_lost``: a worker killed mid-run gives the message back, and
the run is idempotent (each file commits on its own; the rerun finishes the rest). The per-root
advisory lock inside ``index_root_run`` keeps two runs (beat overlapping a manual one, or a
redelivered message) from indexing the same root at once. A worker killed outright (its message
stays unacked until the broker's visibility timeout) is found by ``reap_index_runs`` on beat:
its run row's heartbeat stops, the run is marked and the root queued again.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from files.models import FileRoot, IndexRun
from files.watcher import index_root_run
from files.watcher.runs import index_run_enqueue, index_runs_reap


@shared_task(name="files.tasks.index_root", acks_late=True, reject_on_worker_lost=True)
def index_root(
    root_id: int, full_hash: bool | None = None, run_id: int | None = None
) -> dict[str, Any]:
    return index_root_run(root_id=root_id, full_hash=full_hash, run_id=run_id).as_json()


@shared_task(name="files.tasks.index_all_roots", acks_late=True)
def index_all_roots() -> list[int]:
    """Beat entry: one index run per active root that has none waiting or running."""
    busy = IndexRun.objects.filter(
        state__in=[IndexRun.State.WAITING, IndexRun.State.RUNNING]
    ).values("root_id")  # a waiting row that never ran is settled by the reaper
    roots = FileRoot.objects.filter(state=FileRoot.State.ACTIVE).exclude(pk__in=busy)
    return [
        index_run_enqueue(root_id=pk).pk for pk in roots.order_by("pk").values_list("pk", flat=True)
    ]


@shared_task(name="files.tasks.reap_index_runs")
def reap_index_runs() -> list[dict[str, Any]]:
    """Beat entry: runs whose worker is gone are marked and their root queued again."""
    return [
        {"run_id": r.run_id, "root_id": r.root_id, "state": r.state, "requeued_as": r.requeued_as}
        for r in index_runs_reap()
    ]
