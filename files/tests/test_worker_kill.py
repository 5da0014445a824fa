"""SIGKILL a real Celery worker in the middle of an index run; the rerun loses and duplicates
nothing (acks_late + reject_on_worker_lost, one commit per file, advisory lock per root)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from conversation.models import Character
from files.models import IndexEntry
from files.tasks import index_root
from files.tests.watcher_helpers import index_snapshot, make_root, write
from files.watcher import index_root_run
from tests import processes

BASE_DIR = Path(__file__).resolve().parents[2]
FILES = 24
# A queue of its own: the suite's shared worker (tests/fixtures.py) must not take this run.
QUEUE = f"kill-test-{os.getpid()}"


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
        # Slow the run down so the kill lands in the middle of it (tests only).
        env=processes.process_env(NOVABERG_FILES_TEST_DELAY_PER_FILE_S="0.25"),
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_sigkill_mid_run_then_rerun_equals_a_clean_run(
    tmp_path: Path, user: Any, nova: Character
) -> None:
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
    tmp_path: Path, user: Any, nova: Character
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
        env=processes.process_env(NOVABERG_FILES_TEST_DELAY_PER_FILE_S="0.25"),
    )  # fmt: skip
    try:
        index_root.apply_async(args=(root.pk,), queue=queue)
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
            root.refresh_from_db()
            done = (root.progress or {}).get("done")
            if not (root.progress or {}).get("running") and done == FILES:
                break
            assert worker.poll() is None, (tmp_path / "pool-worker.log").read_text()[-2000:]
            assert time.monotonic() < deadline, f"no rerun finished: {root.progress}"
            time.sleep(0.2)
        log = (tmp_path / "pool-worker.log").read_text()
        assert "WorkerLostError" in log or "exited prematurely" in log
    finally:
        processes.stop(worker)
    assert root.last_counts["new"] + root.last_counts["unchanged"] == FILES
    index_root_run(root_id=clean.pk)
    assert IndexEntry.objects.filter(root=root).count() == FILES  # nothing lost, no duplicate
    assert index_snapshot(root) == index_snapshot(clean)
