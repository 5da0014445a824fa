"""The watcher's fast rescan path and its hashing: what an unchanged rescan may cost (no row
written, no query per file) and that a whole file is hashed whatever the walk saw."""

from __future__ import annotations

import hashlib
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from conversation.models import Character
from files import fsaccess
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import make_root, seed_completed_rows, write
from files.watcher import index_root_run, scan
from files.watcher import run as run_module

pytestmark = pytest.mark.django_db

FILES = 40


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "rand" / "notizen"
    for i in range(FILES):
        write(base, f"d{i % 3}/notiz{i:03d}.md", f"# Notiz {i}\n\nWanderung {i} zur Hütte.\n")
    return base


@pytest.fixture
def root(tree: Path, user: Any, nova: Character) -> FileRoot:
    """A root whose rows are what a completed run leaves: real hash and fingerprint of every
    file (seeded, so the test measures the rescan and not the first enrichment)."""
    root = make_root(user, nova, tree)
    seed_completed_rows(root)
    return root


def _row_versions(root: FileRoot) -> dict[str, str]:
    """PostgreSQL's xmin per row: it changes with every write of the row."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT rel_path, xmin::text FROM files_indexentry WHERE root_id = %s", [root.pk]
        )
        return dict(cur.fetchall())


def test_unchanged_rescan_writes_no_row_and_sends_no_query_per_file(root: FileRoot) -> None:
    before = _row_versions(root)

    with CaptureQueriesContext(connection) as queries:
        report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.outcome == "fertig"
    assert report.counts["unchanged"] == FILES and report.counts["new"] == 0
    statements = [q["sql"] for q in queries.captured_queries]
    assert len(statements) < FILES // 2, statements
    assert _row_versions(root) == before


def test_rescan_refreshes_a_last_seen_older_than_the_granularity(root: FileRoot) -> None:
    old = timezone.now() - run_module.LAST_SEEN_GRANULARITY - timedelta(minutes=5)
    IndexEntry.objects.filter(root=root).update(last_seen_at=old)
    gone = IndexEntry.objects.filter(root=root).order_by("rel_path").first()
    assert gone is not None
    os.unlink(Path(root.path) / gone.rel_path)

    report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.counts["unchanged"] == FILES - 1 and report.counts["gone"] == 1
    fresh = IndexEntry.objects.filter(root=root, last_seen_at__gt=old).count()
    assert fresh == FILES - 1
    gone.refresh_from_db()
    assert gone.state == IndexEntry.State.GONE and gone.last_seen_at == old


def test_fast_path_reads_a_file_whose_inode_changed(root: FileRoot, tree: Path) -> None:
    path = tree / "d0" / "notiz000.md"
    data = path.read_bytes()
    stat = path.stat()
    replacement = tree / "d0" / "neu.tmp"
    replacement.write_bytes(data.replace(b"Notiz 0", b"Notiz X"))  # same size, new inode
    os.replace(replacement, path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # mtime set back, too

    report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.counts["unchanged"] == FILES - 1
    assert report.counts["changed"] == 1
    row = IndexEntry.objects.get(root=root, rel_path="d0/notiz000.md")
    assert row.inhalt_hash == hashlib.sha256(path.read_bytes()).hexdigest()


def _found(path: Path, size: int) -> scan.Found:
    st = path.stat()
    return scan.Found("x.md", str(path), size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, "md")


def _read(path: Path, size: int, max_bytes: int) -> tuple[str, bytes, scan.Found]:
    root_fd = fsaccess.open_dir_path(str(path.parent))
    dirs = fsaccess.DirCache(root_fd)
    try:
        return run_module._read_and_hash(_found(path, size), max_bytes, dirs)
    finally:
        dirs.close()
        os.close(root_fd)


def test_a_file_that_grew_after_the_walk_is_hashed_whole(tmp_path: Path) -> None:
    path = write(tmp_path, "x.md", "a" * 5000 + "b" * 3_000_000)

    digest, data, found = _read(path, 4096, max_bytes=10**7)

    assert data == path.read_bytes()
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()
    # The row's key is the descriptor's, not the walk's stale size.
    assert found.size == len(data)


def test_a_file_that_grew_past_the_limit_is_too_large(tmp_path: Path) -> None:
    path = write(tmp_path, "x.md", "a" * 9000)

    with pytest.raises(run_module._TooLarge):
        _read(path, 4000, max_bytes=8000)


def test_full_hash_rescan_reads_every_file_and_finds_them_unchanged(root: FileRoot) -> None:
    report = index_root_run(root_id=root.pk, full_hash=True)

    assert report.counts["unchanged"] == FILES and report.counts["changed"] == 0
    assert report.counts["full_hash"] is True
