"""SIGKILL a real Celery worker in the middle of an incorporation: the file is before or after,
never half, and the next run completes the work exactly once (intent row settled by the file's
hash, acks_late + reject_on_worker_lost, one deciding row per memory)."""

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

from conversation.models import Session
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun
from knowledge.rueckweg import rueckweg_for_memory
from knowledge.tasks import rueckweg_memory
from knowledge.tests.factories import promoted
from knowledge.tests.test_rueckweg import DEFINITION, KENNLINIE
from tests import processes

QUEUE = f"knowledge-kill-{os.getpid()}"


def _worker(tmp: Path, zone: Path, point: str, pool: str, queue: str) -> subprocess.Popen[bytes]:
    from novaberg.celery import app

    name = f"{queue}@{socket.gethostname()}"
    return processes.start(
        ["celery", "-A", "novaberg", "worker", "-P", pool, "--concurrency", "1", "-l", "INFO",
         "-n", name, "--without-gossip", "--without-mingle", "-Q", queue],
        log_path=tmp / f"worker-{point}.log",
        ready=lambda: bool(app.control.ping(destination=[name], timeout=0.5)),
        env=processes.process_env(
            NOVABERG_KNOWLEDGE_DIR=str(zone),
            NOVABERG_KNOWLEDGE_TEST_HOOK="knowledge.tests.hooks:pause_once",
            NOVABERG_KNOWLEDGE_TEST_HOOK_POINT=point,
            NOVABERG_KNOWLEDGE_TEST_HOOK_DIR=str(tmp),
        ),
    )  # fmt: skip


def _wait_for(path: Path, worker: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while not path.exists():
        assert worker.poll() is None, log.read_text()[-3000:]
        assert time.monotonic() < deadline, "the worker never reached the hook"
        time.sleep(0.05)


def _assert_whole(text: str, before: str) -> None:
    """Either the old file, or the new one with the paragraph in its place — nothing between."""
    if text == before:
        return
    lines = text.split("\n")
    d = lines.index(DEFINITION)
    assert lines[d + 1 : d + 5] == ["", f"[i1>] {KENNLINIE} [<i1]", "", "### Beleg"]
    assert text.count("[i1>]") == 1 and "Version: 1.1" in lines
    assert text.replace(f"\n\n[i1>] {KENNLINIE} [<i1]", "").replace("1.1", "1.0") == before


def _rerun(memory_id: int) -> Any:
    # The dead worker's advisory locks go with its connection; the server may need a moment.
    deadline = time.monotonic() + 30
    while (result := rueckweg_for_memory(memory_entry_id=memory_id)).outcome == "laeuft_schon":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return result


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("point", ["vor_umbenennen", "nach_umbenennen"])
def test_sigkill_mid_incorporation_leaves_before_or_after_and_the_rerun_writes_once(
    tmp_path: Path, zone: Path, corpus: dict[str, Any], folder: Path, session: Session, point: str
) -> None:
    memory = promoted(session, KENNLINIE)
    target = folder / "kennlinie.md"
    before = target.read_text()
    queue = f"{QUEUE}-{point}"
    worker = _worker(tmp_path, zone, point, "solo", queue)
    try:
        rueckweg_memory.apply_async(args=(memory.pk,), queue=queue)
        _wait_for(tmp_path / f"erreicht-{point}", worker, tmp_path / f"worker-{point}.log")
        at_kill = target.read_text()
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)
    if point == "vor_umbenennen":
        assert at_kill == before  # the temp file was complete, the target untouched
        assert any(p.name.endswith(".tmp") for p in folder.iterdir())
    else:
        assert at_kill != before
    _assert_whole(target.read_text(), before)
    assert not RueckwegRun.objects.filter(memory_key=memory.pk, abschliessend=True).exists()
    assert KnowledgeEdit.objects.get(memory_entry=memory).outcome == "vorbereitet"

    result = _rerun(memory.pk)
    assert result.outcome == "eingearbeitet", result
    text = target.read_text()
    _assert_whole(text, before)
    assert text != before and text.count("[i1>]") == 1 and "[i2>]" not in text
    assert not any(p.name.endswith(".tmp") for p in folder.iterdir())
    written = KnowledgeEdit.objects.filter(memory_entry=memory, outcome="geschrieben")
    assert written.count() == 1
    expected_lost = 1 if point == "vor_umbenennen" else 0
    assert (
        KnowledgeEdit.objects.filter(memory_entry=memory, outcome="verworfen").count()
        == expected_lost
    )
    entry = KnowledgeEntry.objects.get(path="kennlinie.md")
    assert (entry.version, entry.haeufigkeit) == ("1.1", 2)
    assert rueckweg_for_memory(memory_entry_id=memory.pk).outcome == "schon_erledigt"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_killed_pool_process_gives_the_message_back_and_the_worker_completes_it(
    tmp_path: Path, zone: Path, corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(session, KENNLINIE)
    target = folder / "kennlinie.md"
    before = target.read_text()
    point = "nach_umbenennen"
    queue = f"{QUEUE}-pool"
    worker = _worker(tmp_path, zone, point, "prefork", queue)
    log = tmp_path / f"worker-{point}.log"
    try:
        rueckweg_memory.apply_async(args=(memory.pk,), queue=queue)
        _wait_for(tmp_path / f"erreicht-{point}", worker, log)
        children = psutil.Process(worker.pid).children()
        assert len(children) == 1, children
        children[0].send_signal(signal.SIGKILL)
        _assert_whole(target.read_text(), before)
        deadline = time.monotonic() + 120
        while not RueckwegRun.objects.filter(memory_key=memory.pk, abschliessend=True).exists():
            assert worker.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "the requeued run never decided"
            time.sleep(0.2)
        text = log.read_text()
        assert "WorkerLostError" in text or "exited prematurely" in text
    finally:
        processes.stop(worker)
    decided = RueckwegRun.objects.get(memory_key=memory.pk, abschliessend=True)
    assert decided.outcome == "eingearbeitet"
    assert target.read_text().count("[i1>]") == 1
    assert KnowledgeEdit.objects.filter(memory_entry=memory, outcome="geschrieben").count() == 1
    assert KnowledgeEntry.objects.get(path="kennlinie.md").haeufigkeit == 2
