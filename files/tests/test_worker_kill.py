"""SIGKILL a real Celery worker in the middle of an index run; the rerun loses and duplicates
nothing (acks_late + reject_on_worker_lost, one commit per learning batch, advisory lock per
root), and a run whose worker died outright is found by its stopped heartbeat and requeued
(issue 10)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from django.contrib.auth.models import User

from conversation.models import Character
from files.models import FileRoot, IndexEntry, IndexRun
from files.tasks import index_root
from files.tests.watcher_helpers import index_snapshot, make_root, write
from files.watcher import index_root_run
from files.watcher.runs import index_runs_reap
from tests import processes

BASE_DIR = Path(__file__).resolve().parents[2]
FILES = 24
# A queue of its own: the suite's shared worker (tests/fixtures.py) must not take this run.
QUEUE = f"kill-test-{os.getpid()}"


def _slow_env() -> dict[str, str]:
    """Slow the run down so the kill lands in the middle of it: a test hook, never a production
    sleep. Built when the worker starts: the test database's name is known only then."""
    return processes.process_env(
        NOVABERG_FILES_TEST_HOOK="files.tests.hooks:slow_files",
        NOVABERG_FILES_TEST_HOOK_DELAY_S="0.25",
        # One file per learning batch, so files commit one by one while the run goes on.
        NOVABERG_FILES_LEARN_BATCH_FILES="1",
    )


def _corpus(base: Path) -> None:
    for i in range(FILES):
        write(base, f"teil{i:02d}.md", f"# Kapitel {i}\n\nText {i} über Wanderwege und Hütten.\n")


def _start_worker(log: Path) -> subprocess.Popen[bytes]:
    from novaberg.celery import app

    name = f"kill-{os.getpid()}@{socket.gethostname()}"
    # Solo pool: the task runs in the worker process itself, so SIGKILL hits the run.
    return processes.start(
        ["celery", "-A", "novaberg", "worker", "-P", "solo", "-l", "INFO", "-n", name,
         "--without-gossip", "--without-mingle", "-Q", QUEUE],
        log_path=log,
        ready=lambda: bool(app.control.ping(destination=[name], timeout=0.5)),
        env=_slow_env(),
    )  # fmt: skip


def _kill_worker_mid_run(tmp_path: Path, user: User, nova: Character) -> tuple[FileRoot, FileRoot]:
    """Two roots over the same corpus; a worker of its own starts indexing the first and is
    SIGKILLed after three files. Returns (the killed root, the untouched twin)."""
    killed_dir, clean_dir = tmp_path / "a", tmp_path / "b"
    _corpus(killed_dir)
    _corpus(clean_dir)
    root = make_root(user, nova, killed_dir)
    clean = make_root(user, nova, clean_dir)
    worker = _start_worker(tmp_path / "worker.log")
    try:
        index_root.apply_async(args=(root.pk,), queue=QUEUE)
        deadline = time.monotonic() + 120
        while IndexEntry.objects.filter(root=root).count() < 3:
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the worker never started indexing"
            time.sleep(0.1)
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    return root, clean


@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_run_then_rerun_equals_a_clean_run(
    tmp_path: Path, user: User, nova: Character
) -> None:
    root, clean = _kill_worker_mid_run(tmp_path, user, nova)
    partial = IndexEntry.objects.filter(root=root).count()
    assert 3 <= partial < FILES, "the kill must land in the middle of the run"
    # The dead worker's session lock goes with its connection; the rerun may have to wait a
    # moment for the server to notice.
    deadline = time.monotonic() + 20
    while (report := index_root_run(root_id=root.pk)).outcome == "laeuft_schon":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert report.outcome == "fertig"
    assert report.counts["new"] + report.counts["unchanged"] == FILES
    assert report.counts["new"] == FILES - partial
    index_root_run(root_id=clean.pk)
    assert IndexEntry.objects.filter(root=root).count() == FILES  # nothing lost, no duplicate
    assert index_snapshot(root) == index_snapshot(clean)


@pytest.mark.django_db(transaction=True)
def test_a_killed_pool_process_gives_the_message_back_and_the_worker_finishes(
    tmp_path: Path, user: User, nova: Character
) -> None:
    """acks_late + reject_on_worker_lost for real: the prefork child running the task dies by
    SIGKILL, the worker puts the message back, a new child runs it again to the end, and the
    index equals one clean run's."""
    from novaberg.celery import app

    killed_dir, clean_dir = tmp_path / "a", tmp_path / "b"
    _corpus(killed_dir)
    _corpus(clean_dir)
    root = make_root(user, nova, killed_dir)
    clean = make_root(user, nova, clean_dir)
    queue = f"{QUEUE}-pool"
    name = f"pool-{os.getpid()}@{socket.gethostname()}"
    worker = processes.start(
        ["celery", "-A", "novaberg", "worker", "-P", "prefork", "--concurrency", "1", "-l",
         "INFO", "-n", name, "--without-gossip", "--without-mingle", "-Q", queue],
        log_path=tmp_path / "pool-worker.log",
        ready=lambda: bool(app.control.ping(destination=[name], timeout=0.5)),
        env=_slow_env(),
    )  # fmt: skip
    run = IndexRun.objects.create(root=root, state=IndexRun.State.WAITING)
    try:
        index_root.apply_async(args=(root.pk,), kwargs={"run_id": run.pk}, queue=queue)
        deadline = time.monotonic() + 120
        while IndexEntry.objects.filter(root=root).count() < 3:
            assert time.monotonic() < deadline, "the worker never started indexing"
            time.sleep(0.1)
        children = psutil.Process(worker.pid).children()
        assert len(children) == 1, children
        children[0].send_signal(signal.SIGKILL)
        killed_at = IndexEntry.objects.filter(root=root).count()
        assert killed_at < FILES, "the kill must land in the middle of the run"
        # The worker itself survives, requeues the message and runs it again to the end.
        deadline = time.monotonic() + 120
        while True:
            run.refresh_from_db()
            if run.state == IndexRun.State.DONE:
                break
            assert worker.poll() is None, (tmp_path / "pool-worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"no rerun finished: {run.state} {run.progress}"
            time.sleep(0.2)
        # The same run row, taken up again by the new child: one run, and it says so.
        assert "Erneut gestartet" in run.note
        assert IndexRun.objects.filter(root=root).count() == 1
        log = (tmp_path / "pool-worker.log").read_text()
        assert "WorkerLostError" in log or "exited prematurely" in log
    finally:
        processes.stop(worker)
    root.refresh_from_db()
    assert root.last_run_id == run.pk
    assert root.last_counts["new"] + root.last_counts["unchanged"] == FILES
    index_root_run(root_id=clean.pk)
    assert IndexEntry.objects.filter(root=root).count() == FILES  # nothing lost, no duplicate
    assert index_snapshot(root) == index_snapshot(clean)


@pytest.mark.django_db(transaction=True)
def test_a_dead_workers_run_is_requeued_by_its_heartbeat_and_finished(
    celery_worker_proc: object, tmp_path: Path, user: User, nova: Character
) -> None:
    """Issue 10: the message of a SIGKILLed worker stays unacked for the broker's visibility
    timeout; the run row's heartbeat stops, beat's reaper marks the run and queues the root
    again, and the suite's worker finishes it — no hour of "running"."""
    root, clean = _kill_worker_mid_run(tmp_path, user, nova)
    dead = IndexRun.objects.get(root=root)
    assert dead.state == IndexRun.State.RUNNING  # what the page showed for an hour before
    # Beat runs the reaper every 15 s with a 45 s threshold; here the threshold is 1 s.
    deadline = time.monotonic() + 30
    while not (reaped := index_runs_reap(stale_after_s=1.0)):
        assert time.monotonic() < deadline, "the dead run was never reaped"
        time.sleep(0.5)
    assert [r.run_id for r in reaped] == [dead.pk]
    dead.refresh_from_db()
    assert dead.state == IndexRun.State.REQUEUED and dead.requeued_as_id is not None
    deadline = time.monotonic() + 120
    while (fresh := IndexRun.objects.get(pk=dead.requeued_as_id)).state in (
        IndexRun.State.WAITING,
        IndexRun.State.RUNNING,
    ):
        assert time.monotonic() < deadline, f"the requeued run did not finish: {fresh.state}"
        time.sleep(0.2)
    assert fresh.state == IndexRun.State.DONE
    root.refresh_from_db()
    assert root.last_run_id == fresh.pk and root.progress["running"] is False
    assert fresh.counts["new"] + fresh.counts["unchanged"] == FILES
    index_root_run(root_id=clean.pk)
    assert IndexEntry.objects.filter(root=root).count() == FILES  # nothing lost, no duplicate
    assert index_snapshot(root) == index_snapshot(clean)
