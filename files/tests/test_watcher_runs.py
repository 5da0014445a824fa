"""One row per watcher run (IndexRun): progress and counts published together, a run that lost
its worker requeued by beat, and the indexing service's block rows and heading keywords."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.db import connections
from django.utils import timezone
from rest_framework.test import APIClient

from conversation.models import Character
from files.indexing import RefreshStatus, index_entry_refresh
from files.models import FileRoot, IndexBlock, IndexEntry, IndexRun
from files.tests.corpus import index_root as corpus_index_root
from files.tests.watcher_helpers import make_root, small_corpus, write
from files.watcher import index_root_run
from files.watcher.hooks import AFTER_FILE
from files.watcher.runs import LOCK_CLASS, index_runs_reap, run_publish

SELADON = """# Reisenotizen

Ein paar Zeilen über die Fahrt im Herbst und das Wetter unterwegs.

## Seladon

Die grünliche Glasur entsteht im reduzierenden Brand aus wenig Eisenoxid.
Sie wurde in China seit der Song-Zeit gebrannt.

## Rückfahrt

Der Zug hatte zwei Stunden Verspätung.
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "rand" / "notizen"
    base.mkdir(parents=True)
    small_corpus(base)
    return base


# -- one run, one row ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_run_has_its_row_with_times_progress_and_counts(
    tree: Path, user: User, nova: Character
) -> None:
    root = make_root(user, nova, tree)
    first = index_root_run(root_id=root.pk)
    write(tree, "neu.md", "# Neu\n\nEine neue Notiz.\n")
    second = index_root_run(root_id=root.pk)
    assert first.run_id is not None and second.run_id is not None
    assert first.run_id != second.run_id
    run = IndexRun.objects.get(pk=second.run_id)
    assert run.state == IndexRun.State.DONE
    assert run.started_at is not None and run.finished_at is not None
    assert run.started_at <= run.finished_at
    assert run.progress == {"done": 5, "total": 5}
    assert run.counts["new"] == 1 and run.counts["unchanged"] == 4
    root.refresh_from_db()
    # The root publishes exactly this run: its progress, its counts, its times.
    assert root.last_run_id == run.pk
    assert root.progress == {"done": 5, "total": 5, "running": False}
    assert root.last_counts == run.counts
    assert root.last_run_started_at == run.started_at
    assert root.last_run_finished_at == run.finished_at


SEEN: list[dict[str, Any]] = []


def observe_published(point: str) -> None:
    """Test hook: after each file, what a reader of the root sees at that moment."""
    if point != AFTER_FILE:
        return
    for root in FileRoot.objects.filter(last_run__isnull=False):
        assert root.last_run is not None
        run = root.last_run
        SEEN.append(
            {
                "progress": dict(root.progress),
                "counts": dict(root.last_counts),
                "run_counts": dict(run.counts),
                "run_state": run.state,
            }
        )


@pytest.mark.django_db
def test_progress_and_counts_during_a_run_belong_to_that_run(
    tree: Path, user: User, nova: Character, settings: Any
) -> None:
    """Issue 9: a reader never sees the progress of this run beside the counts of the last one
    (the old page showed "done 2, running false" with the previous run's "new 0")."""
    for i in range(12):
        write(tree, f"serie/teil{i:02d}.md", f"# Teil {i}\n\nInhalt {i} über Bergtouren.\n")
    root = make_root(user, nova, tree)
    index_root_run(root_id=root.pk)  # a previous run: 16 new
    for i in range(12):
        write(tree, f"serie/teil{i:02d}.md", f"# Teil {i}\n\nGeändert: {i} Hütten.\n")
    SEEN.clear()
    settings.FILES_TEST_HOOK = "files.tests.test_watcher_runs:observe_published"
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.counts["changed"] == 12
    assert SEEN, "the hook saw nothing"
    for seen in SEEN:
        assert seen["run_state"] == IndexRun.State.RUNNING
        assert seen["progress"]["running"] is True
        assert seen["counts"] == seen["run_counts"]
        counted = seen["counts"]["new"] + seen["counts"]["changed"] + seen["counts"]["unchanged"]
        # Never the previous run's 16 new: counts of this run, matching its progress.
        assert seen["counts"]["new"] == 0
        assert counted == seen["progress"]["done"]


@pytest.mark.django_db
def test_a_run_that_finds_another_running_is_skipped_with_a_note(
    tree: Path, user: User, nova: Character
) -> None:
    root = make_root(user, nova, tree)
    waiting = IndexRun.objects.create(root=root, state=IndexRun.State.WAITING)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_CLASS, root.pk])
        assert index_root_run(root_id=root.pk, run_id=waiting.pk).outcome == "laeuft_schon"
    finally:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, root.pk])
        other.close()
    waiting.refresh_from_db()
    assert waiting.state == IndexRun.State.SKIPPED and "anderer Lauf" in waiting.note


# -- a run whose worker is gone ------------------------------------------------------------------


def _stale_run(root: FileRoot, *, seconds: int = 120) -> IndexRun:
    """What a SIGKILLed worker leaves: a running row whose heartbeat stopped."""
    run = IndexRun.objects.create(
        root=root, state=IndexRun.State.RUNNING, started_at=timezone.now() - timedelta(minutes=5)
    )
    run_publish(
        run=run, state=IndexRun.State.RUNNING, done=1, total=4, counts={"new": 1, "errors": 0}
    )
    IndexRun.objects.filter(pk=run.pk).update(
        heartbeat_at=timezone.now() - timedelta(seconds=seconds)
    )
    return run


def _wait_run(run_id: int, timeout: float = 120) -> IndexRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = IndexRun.objects.get(pk=run_id)
        if run.state not in (IndexRun.State.WAITING, IndexRun.State.RUNNING):
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not finish: {IndexRun.objects.get(pk=run_id).state}")


def test_beat_requeues_within_a_minute() -> None:
    schedule = django_settings.CELERY_BEAT_SCHEDULE["files-reap-index-runs"]
    assert schedule["task"] == "files.tasks.reap_index_runs"
    period = float(schedule["schedule"])  # type: ignore[arg-type]
    assert django_settings.FILES_RUN_STALE_AFTER_S + period <= 60


@pytest.mark.django_db(transaction=True)
def test_a_stale_run_is_requeued_and_the_worker_finishes_it(
    celery_worker_proc: Any, tree: Path, user: User, nova: Character, api: APIClient
) -> None:
    root = make_root(user, nova, tree)
    stale = _stale_run(root)
    assert api.get(f"/api/roots/{root.pk}/").json()["progress"]["running"] is True
    reaped = index_runs_reap()
    assert [(r.run_id, r.state) for r in reaped] == [(stale.pk, IndexRun.State.REQUEUED)]
    stale.refresh_from_db()
    assert stale.state == IndexRun.State.REQUEUED and stale.finished_at is not None
    assert stale.requeued_as_id == reaped[0].requeued_as
    assert "kein Lebenszeichen" in stale.note and f"Lauf {stale.requeued_as_id}" in stale.note
    assert stale.requeued_as_id is not None
    fresh = _wait_run(stale.requeued_as_id)
    assert fresh.state == IndexRun.State.DONE, fresh.note
    assert f"Lauf {stale.pk}" in fresh.note  # the page says why this run exists
    body = api.get(f"/api/roots/{root.pk}/").json()
    assert body["progress"] == {"done": 4, "total": 4, "running": False}
    assert body["counts"]["new"] == 4
    # The page shows the run these numbers belong to, and why it exists.
    assert body["run"]["id"] == fresh.pk and body["run"]["state"] == "fertig"
    assert f"Lauf {stale.pk}" in body["run"]["note"]
    assert IndexEntry.objects.filter(root=root).count() == 4
    # The dead worker's message, redelivered later, runs nothing twice.
    assert index_root_run(root_id=root.pk, run_id=stale.pk).outcome == "ersetzt"


@pytest.mark.django_db
def test_a_slow_but_living_run_is_not_reaped(tree: Path, user: User, nova: Character) -> None:
    root = make_root(user, nova, tree)
    stale = _stale_run(root)
    other = connections.create_connection("default")
    try:
        with other.cursor() as cur:  # the living worker's session holds the root lock
            cur.execute("SELECT pg_advisory_lock(%s, %s)", [LOCK_CLASS, root.pk])
        assert index_runs_reap() == []
    finally:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, root.pk])
        other.close()
    stale.refresh_from_db()
    assert stale.state == IndexRun.State.RUNNING
    assert index_runs_reap(stale_after_s=600) == []  # a fresh heartbeat is never reaped


@pytest.mark.django_db
def test_a_run_that_keeps_dying_is_aborted_not_requeued_forever(
    tree: Path, user: User, nova: Character
) -> None:
    root = make_root(user, nova, tree)
    for _ in range(3):
        IndexRun.objects.create(
            root=root, state=IndexRun.State.REQUEUED, finished_at=timezone.now()
        )
    stale = _stale_run(root)
    reaped = index_runs_reap()
    assert [(r.run_id, r.state, r.requeued_as) for r in reaped] == [
        (stale.pk, IndexRun.State.ABORTED, None)
    ]
    root.refresh_from_db()
    assert root.progress["running"] is False
    assert "abgebrochen" in IndexRun.objects.get(pk=stale.pk).note


# -- the indexing service --------------------------------------------------------------------------


@pytest.mark.django_db
def test_headings_are_keywords_of_their_block_and_file(
    tmp_path: Path, user: User, nova: Character
) -> None:
    base = tmp_path / "rand" / "reisen"
    write(base, "reise.md", SELADON)
    root = make_root(user, nova, base)
    corpus_index_root(root, {"reise.md": SELADON})
    entry = IndexEntry.objects.get(root=root, rel_path="reise.md")
    assert "seladon" in entry.keywords and "rückfahrt" in entry.keywords
    blocks = {b.heading: b for b in IndexBlock.objects.filter(entry=entry)}
    seladon = blocks["Seladon"]
    assert seladon.keywords[0] == "seladon"
    # The block row holds its parsed lines, and they are the cited lines.
    lines = SELADON.splitlines()
    assert seladon.text == "\n".join(lines[seladon.line_start - 1 : seladon.line_end])
    assert seladon.text.startswith("## Seladon")
    assert seladon.search_vector is not None and seladon.search_vector_simple is not None
    assert seladon.embedding is not None
    assert "seladon" not in blocks["Rückfahrt"].keywords
    # Not every word is a keyword: "nothing relevant" must stay expressible.
    assert "zeilen" not in entry.keywords and "unterwegs" not in entry.keywords


@pytest.mark.django_db
def test_search_finds_a_topic_that_is_only_a_heading(
    tmp_path: Path, user: User, nova: Character, api: APIClient
) -> None:
    base = tmp_path / "rand" / "reisen"
    write(base, "reise.md", SELADON)
    root = make_root(user, nova, base)
    index_root_run(root_id=root.pk)
    results = api.get("/api/search/", {"q": "Was weißt du über Seladon?"}).json()["results"]
    assert results and results[0]["path"] == "reise.md"


@pytest.mark.django_db
def test_a_copy_takes_over_the_enrichment_without_new_embeddings(
    tmp_path: Path, user: User, nova: Character, monkeypatch: pytest.MonkeyPatch
) -> None:
    from files import indexing

    base = tmp_path / "rand" / "kopie"
    write(base, "a/reise.md", SELADON)
    write(base, "b/reise.md", SELADON)
    root = make_root(user, nova, base)
    calls: list[int] = []
    real = indexing.embed

    def counting(texts: list[str]) -> list[list[float]]:
        calls.append(len(texts))
        return real(texts)

    monkeypatch.setattr(indexing, "embed", counting)
    report = index_root_run(root_id=root.pk)
    assert report.counts["new"] == 2
    # One batched call for both files: one topic and three blocks, the copy reuses them.
    assert calls == [4]
    a, b = (IndexEntry.objects.get(root=root, rel_path=p) for p in ("a/reise.md", "b/reise.md"))
    assert a.topic_embedding is not None and b.topic_embedding is not None
    assert a.keywords == b.keywords and list(a.topic_embedding) == list(b.topic_embedding)
    assert IndexBlock.objects.filter(entry=b, embedding__isnull=False).count() == 3
    # Alone, the second copy finds its twin in the index: no embedding at all.
    calls.clear()
    write(base, "c/reise.md", SELADON)
    result = index_entry_refresh(
        item=indexing.FileToIndex(
            root=root,
            rel_path="c/reise.md",
            format="markdown",
            digest=a.inhalt_hash,
            text=SELADON,
            size=len(SELADON.encode()),
        )
    )
    assert result.status == RefreshStatus.NEW and result.source == "wiedererkannt"
    assert calls == []
