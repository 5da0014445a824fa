"""Run rows: one ``IndexRun`` per watcher run, and the root's published copy of it.

What a person sees of a run (progress, counts, start and end) always belongs to one
run. Every update writes the run row and the root's JSON fields (``progress``, ``last_counts``,
``last_run_*``, ``last_run``) in ONE transaction, so no reader sees the progress of one run
next to the counts of another.

The heartbeat moves with every progress update. A run whose heartbeat is older than
``FILES_RUN_STALE_AFTER_S`` *and* whose root lock is free (the PostgreSQL session lock of a dead
worker goes with its connection) lost its worker: beat marks it ``neu_eingereiht`` with a German
note and queues the root again, instead of waiting for the broker's visibility timeout.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from files.models import FileRoot, IndexRun

logger = logging.getLogger(__name__)

# pg_advisory_lock(classid, objid): classid names the file service ("NB" + 4), objid the root.
LOCK_CLASS = 0x4E4204
# A root whose runs keep dying is not requeued forever (a file that kills the worker).
MAX_REQUEUES_PER_HOUR = 3
OPEN_STATES = (IndexRun.State.WAITING, IndexRun.State.RUNNING)
# A waiting run no worker took within this time lost its message (e.g. a flushed broker).
WAITING_LOST_AFTER = timedelta(hours=1)


def root_lock_is_free(root_id: int) -> bool:
    """True when no session holds the root's run lock (probe: take it and give it back)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, root_id])
        row = cur.fetchone()
        got = bool(row and row[0])
        if got:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, root_id])
    return got


def _progress_json(run: IndexRun) -> dict[str, Any]:
    progress = run.progress or {}
    return {
        "done": int(progress.get("done", 0)),
        "total": int(progress.get("total", 0)),
        "running": run.state == IndexRun.State.RUNNING,
    }


def _publish_root(run: IndexRun, **extra: Any) -> None:
    """The root's published copy of ``run`` (call inside the run row's transaction)."""
    FileRoot.objects.filter(pk=run.root_id).update(
        last_run=run,
        progress=_progress_json(run),
        last_counts=run.counts or {},
        last_run_started_at=run.started_at,
        last_run_finished_at=run.finished_at,
        **extra,
    )


def _commit_without_flush_wait() -> None:
    """Let this transaction's commit return before its WAL is flushed to disk
    (``SET LOCAL synchronous_commit TO OFF``: this transaction only).

    For run bookkeeping alone (state, progress, counts, heartbeat and the root's copy): a
    crash of the database server itself may lose the last fraction of a second of it, which
    leaves a run that looks running with an old heartbeat — exactly what beat's reaper
    requeues, and a run is idempotent. Index rows are never written this way. A rescan of
    unchanged files then pays no disk flush for its bookkeeping (three per run otherwise)."""
    with connection.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit TO OFF")


# No savepoint when nested (a claim): the caller's transaction is the unit, one round trip less.
@transaction.atomic(savepoint=False)
def run_publish(
    *,
    run: IndexRun,
    state: IndexRun.State,
    done: int,
    total: int,
    counts: dict[str, Any],
    finished: bool = False,
    note: str | None = None,
    root_fields: dict[str, Any] | None = None,
) -> None:
    """One update of a run: its row and the root's copy together, heartbeat included."""
    _commit_without_flush_wait()
    now = timezone.now()
    run.state = state
    run.progress = {"done": done, "total": total}
    run.counts = counts
    run.heartbeat_at = now
    fields = ["state", "progress", "counts", "heartbeat_at"]
    if finished:
        run.finished_at = now
        fields.append("finished_at")
    if note is not None:
        run.note = note
        fields.append("note")
    run.save(update_fields=fields)
    _publish_root(run, **(root_fields or {}))


# A run whose task could not be sent (the broker stalled or is down) is settled at once with
# this note instead of failing the request that released, confirmed or reactivated the root.
BROKER_DOWN_NOTE = (
    "Dieser Lauf konnte nicht gestartet werden, weil der Auftragsdienst nicht antwortete; "
    "der nächste geplante Lauf übernimmt."
)


def _send(run: IndexRun, full_hash: bool | None) -> None:
    """Send the run's task (after commit). A broker that does not take it settles the run as
    ``abgebrochen`` with BROKER_DOWN_NOTE and a named log line; the caller's request still
    succeeds (its write is committed) and beat's next run of the root takes over."""
    from kombu.exceptions import OperationalError as KombuOperationalError
    from redis.exceptions import RedisError

    from files.tasks import index_root

    try:
        index_root.apply_async(
            args=(run.root_id,),
            kwargs={"full_hash": full_hash, "run_id": run.pk},
            task_id=run.celery_task_id,
        )
    except (KombuOperationalError, RedisError, OSError) as exc:
        logger.warning(
            "watcher: run %s of root %s not sent: %s",
            run.pk,
            run.root_id,
            type(exc).__name__,
            extra={"outcome": "auftragsdienst_nicht_erreichbar"},
        )
        run_settle_unsent(run_id=run.pk)


def run_settle_unsent(*, run_id: int) -> bool:
    """A waiting run whose task was never sent: ``abgebrochen`` with BROKER_DOWN_NOTE, and the
    root's published copy shows it. False when the run had left ``wartend`` already."""
    with transaction.atomic():
        settled = IndexRun.objects.filter(pk=run_id, state=IndexRun.State.WAITING).update(
            state=IndexRun.State.ABORTED, finished_at=timezone.now(), note=BROKER_DOWN_NOTE
        )
        if settled:
            run = IndexRun.objects.get(pk=run_id)
            if FileRoot.objects.filter(pk=run.root_id, last_run_id=run.pk).exists():
                _publish_root(run)
    return bool(settled)


def run_was_unsent(*, run_id: int) -> bool:
    """True when ``run_id`` was settled by ``run_settle_unsent`` (its task never left)."""
    return IndexRun.objects.filter(
        pk=run_id, state=IndexRun.State.ABORTED, note=BROKER_DOWN_NOTE
    ).exists()


@transaction.atomic
def index_run_enqueue(*, root_id: int, full_hash: bool | None = None, note: str = "") -> IndexRun:
    """A waiting run row for the root and, after commit, the task that runs it. The caller
    (a service) has checked that the person owns the root and that it is active."""
    run = IndexRun.objects.create(
        root_id=root_id,
        state=IndexRun.State.WAITING,
        full_hash=bool(full_hash),
        celery_task_id=str(uuid.uuid4()),
        note=note,
    )
    running = IndexRun.objects.filter(root_id=root_id, state=IndexRun.State.RUNNING).exists()
    if not running:
        # The person sees at once that a run waits; a running run keeps the published copy.
        _publish_root(run)
    transaction.on_commit(lambda: _send(run, full_hash))
    return run


def run_claim(*, root: FileRoot, run_id: int | None, full_hash: bool) -> IndexRun | None:
    """The run row this worker now runs (call while holding the root lock): the waiting row
    ``run_id``, or a new row for a run started without one (command line, tests). None when
    ``run_id`` was settled already (requeued by beat, or finished): the message is stale."""
    now = timezone.now()
    if run_id is None:
        with transaction.atomic():  # the row and its first publish: one commit
            run = IndexRun.objects.create(
                root=root,
                state=IndexRun.State.RUNNING,
                started_at=now,
                heartbeat_at=now,
                full_hash=full_hash,
            )
            run_publish(run=run, state=IndexRun.State.RUNNING, done=0, total=0, counts={})
        return run
    with transaction.atomic():
        waiting = (
            IndexRun.objects.select_for_update()
            .filter(pk=run_id, root=root, state__in=OPEN_STATES)
            .first()
        )
        if waiting is None:
            return None
        run = waiting
        if run.state == IndexRun.State.RUNNING:
            # The same message again: its worker process died and the broker gave it back.
            run.note = (
                "Erneut gestartet: der Worker-Prozess dieses Laufs ist ausgefallen; "
                "der Lauf macht dort weiter, wo die Dateien noch fehlen."
            )
        run.started_at = now
        run.full_hash = full_hash
        run.save(update_fields=["note", "started_at", "full_hash"])
        run_publish(run=run, state=IndexRun.State.RUNNING, done=0, total=0, counts={})
    return run


def run_skip(*, run_id: int, note: str) -> None:
    """A waiting run that will not run (another run of the root holds the lock)."""
    IndexRun.objects.filter(pk=run_id, state=IndexRun.State.WAITING).update(
        state=IndexRun.State.SKIPPED, finished_at=timezone.now(), note=note
    )


@dataclass(frozen=True)
class Reaped:
    run_id: int
    root_id: int
    state: str
    requeued_as: int | None


def index_runs_reap(*, stale_after_s: float | None = None) -> list[Reaped]:
    """Runs whose worker is gone: marked and (while the root is active) queued again."""
    stale_s = settings.FILES_RUN_STALE_AFTER_S if stale_after_s is None else stale_after_s
    now = timezone.now()
    cutoff = now - timedelta(seconds=stale_s)
    out: list[Reaped] = []
    for lost in IndexRun.objects.filter(
        state=IndexRun.State.WAITING, created_at__lt=now - WAITING_LOST_AFTER
    ):
        with transaction.atomic():
            settled = IndexRun.objects.filter(pk=lost.pk, state=IndexRun.State.WAITING).update(
                state=IndexRun.State.ABORTED,
                finished_at=now,
                note="Dieser Lauf wurde nie gestartet (Auftrag verloren); "
                "der nächste geplante Lauf übernimmt.",
            )
        if settled:
            out.append(Reaped(lost.pk, lost.root_id, IndexRun.State.ABORTED, None))
    candidates = list(
        IndexRun.objects.filter(state=IndexRun.State.RUNNING, heartbeat_at__lt=cutoff)
        .select_related("root")
        .order_by("pk")
    )
    for stale in candidates:
        # A live worker holds the lock (a slow file, a slow model): not dead, leave it.
        if not root_lock_is_free(stale.root_id):
            continue
        reaped = _reap_one(stale.pk, cutoff, stale_s)
        if reaped is not None:
            logger.warning(
                "watcher: run %s of root %s had no heartbeat for %.0f s: %s",
                reaped.run_id,
                reaped.root_id,
                stale_s,
                reaped.state,
                extra={"outcome": reaped.state},
            )
            out.append(reaped)
    return out


@transaction.atomic
def _reap_one(run_id: int, cutoff: Any, stale_s: float) -> Reaped | None:
    run = (
        IndexRun.objects.select_for_update()
        .select_related("root")
        .filter(pk=run_id, state=IndexRun.State.RUNNING, heartbeat_at__lt=cutoff)
        .first()
    )
    if run is None:
        return None
    now = timezone.now()
    since = timezone.localtime(run.heartbeat_at or now).strftime("%H:%M:%S")
    lost = f"Der Worker dieses Laufs gab seit {since} kein Lebenszeichen mehr (abgestürzt?)"
    recent = IndexRun.objects.filter(
        root_id=run.root_id,
        state=IndexRun.State.REQUEUED,
        finished_at__gte=now - timedelta(hours=1),
    ).count()
    root = run.root
    if root.state != FileRoot.State.ACTIVE or recent >= MAX_REQUEUES_PER_HOUR:
        why = (
            "der Ordner ist nicht mehr aktiv"
            if root.state != FileRoot.State.ACTIVE
            else f"er brach binnen einer Stunde {recent + 1}-mal ab; der nächste geplante "
            "Lauf versucht es wieder"
        )
        run.state = IndexRun.State.ABORTED
        run.finished_at = now
        run.note = f"{lost}; abgebrochen, nicht neu eingereiht: {why}."
        run.save(update_fields=["state", "finished_at", "note"])
        _publish_root(run)
        return Reaped(run.pk, run.root_id, run.state, None)
    fresh = index_run_enqueue(
        root_id=root.pk,
        full_hash=run.full_hash,
        note=f"Neu eingereiht um {timezone.localtime(now).strftime('%H:%M:%S')}, weil Lauf "
        f"{run.pk} ohne Lebenszeichen war (Worker ausgefallen).",
    )
    run.state = IndexRun.State.REQUEUED
    run.finished_at = now
    run.requeued_as = fresh
    run.note = f"{lost}; neu eingereiht als Lauf {fresh.pk}."
    run.save(update_fields=["state", "finished_at", "requeued_as", "note"])
    # The root shows the fresh run, whose note says what happened to this one.
    _publish_root(fresh)
    return Reaped(run.pk, run.root_id, run.state, fresh.pk)
