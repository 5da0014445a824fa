"""The rescan fast path (issue 16): the walk settles unchanged files against the stored keys,
loaded in one pipelined query beside it. What it may cost does not grow with the files, and
what it settles is only what the full rules would have found unchanged."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from conversation.models import Character
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import make_root, seed_completed_rows, write
from files.watcher import index_root_run, scan

pytestmark = pytest.mark.django_db


def _seeded_root(base: Path, files: int, user: Any, nova: Character) -> FileRoot:
    """``files`` notes and the rows a completed run leaves for them (real hash and key), so
    the test measures the rescan and not the first enrichment."""
    for i in range(files):
        write(base, f"d{i % 7}/notiz{i:04d}.md", f"# Notiz {i}\n\nWanderung {i} zur Hütte.\n")
    root = make_root(user, nova, base)
    seed_completed_rows(root)
    return root


def _statements(root: FileRoot) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        report = index_root_run(root_id=root.pk, full_hash=False)
    assert report.outcome == "fertig", report.as_json()
    assert report.counts["unchanged"] == IndexEntry.objects.filter(root=root).count()
    assert report.counts["new"] == report.counts["changed"] == report.counts["gone"] == 0
    return [q["sql"] for q in queries.captured_queries]


def _row_versions(root: FileRoot) -> dict[str, str]:
    """PostgreSQL's xmin per row: it changes with every write of the row."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT rel_path, xmin::text FROM files_indexentry WHERE root_id = %s", [root.pk]
        )
        return dict(cur.fetchall())


def test_an_unchanged_rescan_sends_as_many_statements_for_1000_files_as_for_10(
    tmp_path: Path, user: Any, nova: Character
) -> None:
    small = _seeded_root(tmp_path / "rand" / "klein", 10, user, nova)
    large = _seeded_root(tmp_path / "rand" / "gross", 1000, user, nova)
    before = _row_versions(large)

    few = _statements(small)
    many = _statements(large)

    # The two reads beside the walk (the keys, stale sightings) go through psycopg's
    # pipeline; everything else is bookkeeping of the run, the same for any number of files.
    assert len(many) == len(few), many
    assert len(many) <= 20, many
    assert not any("files_indexentry" in sql for sql in many), many
    assert _row_versions(large) == before


def test_among_1000_unchanged_files_a_changed_a_touched_a_deleted_and_a_new_are_found(
    tmp_path: Path, user: Any, nova: Character
) -> None:
    base = tmp_path / "rand" / "notizen"
    root = _seeded_root(base, 1000, user, nova)
    changed = base / "d3/notiz0500.md"
    changed.write_text(changed.read_text().replace("Hütte", "Alm"), encoding="utf-8")
    touched = base / "d4/notiz0200.md"
    st = touched.stat()
    os.utime(touched, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    (base / "d1/notiz0001.md").unlink()
    write(base, "d0/neu.md", "# Neu\n\nEin Weg über den Pass.\n")

    report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.outcome == "fertig", report.as_json()
    counts = report.counts
    assert (counts["new"], counts["changed"], counts["gone"]) == (1, 1, 1), counts
    # The touched file is read, found identical by its hash, and counted unchanged.
    assert counts["unchanged"] == 998, counts
    row = IndexEntry.objects.get(root=root, rel_path="d3/notiz0500.md")
    assert row.inhalt_hash == hashlib.sha256(changed.read_bytes()).hexdigest()
    same = IndexEntry.objects.get(root=root, rel_path="d4/notiz0200.md")
    assert same.mtime_ns == touched.stat().st_mtime_ns  # its new key is stored: settled next
    gone = IndexEntry.objects.get(root=root, rel_path="d1/notiz0001.md")
    assert gone.state == IndexEntry.State.GONE
    assert IndexEntry.objects.filter(root=root, rel_path="d0/neu.md").exists()

    again = index_root_run(root_id=root.pk, full_hash=False)

    assert again.counts["unchanged"] == 1000 and again.counts["gone"] == 0, again.counts


def test_a_stored_file_swapped_for_a_link_out_of_the_root_is_not_settled(
    tmp_path: Path, user: Any, nova: Character
) -> None:
    base = tmp_path / "rand" / "notizen"
    root = _seeded_root(base, 20, user, nova)
    outside = write(tmp_path, "draussen/geheim.md", "# Geheim\n\nNicht freigegeben.\n")
    swapped = base / "d2/notiz0002.md"
    swapped.unlink()
    swapped.symlink_to(outside)

    report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.counts["unchanged"] == 19 and report.counts["gone"] == 1, report.counts
    assert report.counts["skipped"] == {scan.LINK_OUT: 1}
    row = IndexEntry.objects.get(root=root, rel_path="d2/notiz0002.md")
    assert row.state == IndexEntry.State.GONE
    assert "Geheim" not in (row.topic + row.summary + row.search_text)


def test_an_unchanged_file_the_root_now_excludes_is_not_settled(
    tmp_path: Path, user: Any, nova: Character
) -> None:
    base = tmp_path / "rand" / "notizen"
    root = _seeded_root(base, 21, user, nova)
    root.exclude_globs = ["d5/*"]
    root.save(update_fields=["exclude_globs"])

    report = index_root_run(root_id=root.pk, full_hash=False)

    assert report.counts["skipped"] == {scan.EXCLUDED: 3}, report.counts
    assert report.counts["unchanged"] == 18 and report.counts["gone"] == 3, report.counts
