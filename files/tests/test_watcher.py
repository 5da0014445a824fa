"""The watcher: content-hash change detection, gone vs no longer watched, archived, crash safety,
the read-only guarantee and the failure list of issue 4."""

from __future__ import annotations

import builtins
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchQuery
from django.db import connections

from conversation.models import Character
from files import selectors
from files.models import FileRoot, IndexBlock, IndexEntry
from files.tests.watcher_helpers import (
    index_snapshot,
    make_root,
    small_corpus,
    tree_fingerprint,
    write,
)
from files.watcher import index_root_run, scan
from files.watcher import run as run_module
from files.watcher.hooks import AFTER_WRITE
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    base = tmp_path / "rand" / "notizen"
    base.mkdir(parents=True)
    small_corpus(base)
    return base


@pytest.fixture
def root(tree: Path, user: Any, nova: Character) -> FileRoot:
    return make_root(user, nova, tree)


def entry(root: FileRoot, rel: str) -> IndexEntry:
    return IndexEntry.objects.get(root=root, rel_path=rel)


def test_first_run_indexes_every_format_and_enriches(root: FileRoot) -> None:
    report = index_root_run(root_id=root.pk)
    assert report.outcome == "fertig"
    assert report.counts["new"] == 4 and report.counts["errors"] == 0
    tee = entry(root, "tee.md")
    assert tee.topic == "Tee"
    assert tee.summary == "Grüner Tee braucht 80 Grad Wasser."
    assert "tee" in tee.keywords
    assert tee.format == "markdown" and tee.state == "vorhanden"
    assert tee.zuletzt_gelernt_hash is None  # null until learned
    assert len(tee.inhalt_hash) == 64 and tee.indexed_at is not None
    assert [b["heading"] for b in tee.block_map if b["kind"] == "section"] == ["Tee", "Ziehzeit"]
    assert tee.block_map[1]["line_start"] == 5 and tee.block_map[1]["line_end"] == 6
    assert tee.topic_embedding is not None and len(tee.topic_embedding) == 384
    assert IndexBlock.objects.filter(entry=tee, embedding__isnull=False).count() == 2
    # Both full-text forms are filled: German stemming finds "Minute" in "Minuten".
    assert IndexEntry.objects.filter(
        pk=tee.pk, search_vector=SearchQuery("Minute", config="german")
    ).exists()
    assert IndexEntry.objects.filter(
        pk=tee.pk, search_vector_simple=SearchQuery("ziehzeit", config="simple")
    ).exists()
    assert entry(root, "code/app.py").block_map[-1]["heading"] == "def main"
    root.refresh_from_db()
    assert root.last_counts["new"] == 4
    assert root.progress == {"done": 4, "total": 4, "running": False}
    assert root.last_full_hash_at is not None


def test_archived_flag_follows_the_archive_segment(root: FileRoot, tree: Path) -> None:
    write(tree, "projekt/archive/v1/plan.md", "# Plan\n\nalt\n")
    write(tree, "archived-notes.md", "# Nicht archiviert\n\nDer Name allein zählt nicht.\n")
    index_root_run(root_id=root.pk)
    archived = set(
        IndexEntry.objects.filter(root=root, archived=True).values_list("rel_path", flat=True)
    )
    assert archived == {"archive/alt.md", "projekt/archive/v1/plan.md"}


def test_hidden_files_and_folders_are_not_entered(root: FileRoot, tree: Path) -> None:
    write(tree, ".geheim.md", "# Geheim\n")
    write(tree, ".git/config.md", "# Git\n")
    write(tree, "sub/.env.txt", "TOKEN=1\n")
    report = index_root_run(root_id=root.pk)
    paths = set(IndexEntry.objects.filter(root=root).values_list("rel_path", flat=True))
    assert not any("geheim" in p or ".git" in p or ".env" in p for p in paths)
    assert report.counts["skipped"]["verborgen"] == 3
    assert report.counts["new"] == 4


def test_unchanged_second_run_learns_nothing(root: FileRoot) -> None:
    index_root_run(root_id=root.pk)
    before = entry(root, "tee.md").indexed_at
    for full in (False, True):
        report = index_root_run(root_id=root.pk, full_hash=full)
        assert report.counts["unchanged"] == 4
        assert report.counts["new"] == report.counts["changed"] == 0
    assert entry(root, "tee.md").indexed_at == before


def _rewrite_same_size_same_mtime(path: Path, new_text: str) -> None:
    old = path.stat()
    assert len(new_text.encode()) == old.st_size
    path.write_text(new_text, encoding="utf-8")
    os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
    now = path.stat()
    assert (now.st_size, now.st_mtime_ns) == (old.st_size, old.st_mtime_ns)


def test_same_size_same_mtime_rewrite_is_caught_by_the_fast_path(
    root: FileRoot, tree: Path
) -> None:
    index_root_run(root_id=root.pk)
    original = (tree / "notiz.txt").read_text()
    _rewrite_same_size_same_mtime(tree / "notiz.txt", original.replace("Milch", "Honig"))
    report = index_root_run(root_id=root.pk, full_hash=False)
    assert report.full_hash is False
    assert report.counts["changed"] == 1 and report.counts["unchanged"] == 3
    assert "Honig" in entry(root, "notiz.txt").search_text


def test_same_size_same_mtime_rewrite_is_caught_by_the_full_hash_run(
    root: FileRoot, tree: Path
) -> None:
    index_root_run(root_id=root.pk)
    original = (tree / "notiz.txt").read_text()
    _rewrite_same_size_same_mtime(tree / "notiz.txt", original.replace("Milch", "Honig"))
    # Make the stored fingerprint match the new file exactly (as if ctime had not moved):
    # the fast path is blind now, and only the content hash can see the change.
    st = (tree / "notiz.txt").stat()
    IndexEntry.objects.filter(root=root, rel_path="notiz.txt").update(ctime_ns=st.st_ctime_ns)
    blind = index_root_run(root_id=root.pk, full_hash=False)
    assert blind.counts["changed"] == 0  # why the periodic full-hash run exists
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.counts["changed"] == 1
    assert "Honig" in entry(root, "notiz.txt").search_text


def test_full_hash_run_is_periodic(root: FileRoot, settings: Any) -> None:
    settings.FILES_FULL_HASH_EVERY_S = 3600
    assert index_root_run(root_id=root.pk).full_hash is True  # never verified yet
    assert index_root_run(root_id=root.pk).full_hash is False
    FileRoot.objects.filter(pk=root.pk).update(last_full_hash_at="2000-01-01T00:00:00Z")
    assert index_root_run(root_id=root.pk).full_hash is True
    settings.FILES_FAST_PATH = False
    assert index_root_run(root_id=root.pk).full_hash is True


def test_gone_is_not_no_longer_watched(root: FileRoot, tree: Path, user: Any) -> None:
    index_root_run(root_id=root.pk)
    (tree / "notiz.txt").unlink()
    report = index_root_run(root_id=root.pk)
    assert report.counts["gone"] == 1
    gone = entry(root, "notiz.txt")
    assert gone.state == "fort"  # marked, not deleted
    searchable = selectors.searchable_entries(user=user, character=root.character)
    assert set(searchable.values_list("rel_path", flat=True)) == {
        "tee.md",
        "code/app.py",
        "archive/alt.md",
    }
    # No longer watched: the root is suspended, the rows stay as they were, nothing searched.
    FileRoot.objects.filter(pk=root.pk).update(state=FileRoot.State.SUSPENDED)
    (tree / "tee.md").unlink()
    assert index_root_run(root_id=root.pk).outcome == "nicht_aktiv"
    assert entry(root, "tee.md").state == "vorhanden"
    assert IndexEntry.objects.filter(root=root).count() == 4
    assert not selectors.searchable_entries(user=user, character=root.character).exists()


def test_a_file_that_comes_back_is_recognised_by_hash(root: FileRoot, tree: Path) -> None:
    index_root_run(root_id=root.pk)
    content = (tree / "tee.md").read_bytes()
    learned = entry(root, "tee.md").indexed_at
    (tree / "tee.md").unlink()
    index_root_run(root_id=root.pk)
    assert entry(root, "tee.md").state == "fort"
    (tree / "tee.md").write_bytes(content)
    report = index_root_run(root_id=root.pk)
    back = entry(root, "tee.md")
    assert back.state == "vorhanden" and back.indexed_at == learned
    assert report.counts["notes"]["wieder_da"] == 1 and report.counts["new"] == 0
    # Moved: the new path takes the enrichment over by hash, the old path is gone.
    (tree / "tee.md").rename(tree / "getraenke.md")
    report = index_root_run(root_id=root.pk)
    assert report.counts["notes"]["wiedererkannt"] == 1
    assert entry(root, "getraenke.md").topic == "Tee"
    assert entry(root, "tee.md").state == "fort"


class Killed(BaseException):
    """Stands in for SIGKILL: not an Exception, so the per-file guard does not catch it."""


WRITES = {"n": 0}


def die_after_four_writes(point: str) -> None:
    """Test hook (NOVABERG_FILES_TEST_HOOK): the run dies right after its 4th learned file."""
    if point == AFTER_WRITE:
        WRITES["n"] += 1
        if WRITES["n"] == 4:
            raise Killed


def _two_equal_trees(tmp_path: Path, user: User, nova: Character) -> tuple[FileRoot, FileRoot]:
    roots = []
    for name in ("a", "b"):
        base = tmp_path / "rand" / name
        small_corpus(base)
        for i in range(6):
            write(base, f"serie/teil{i}.md", f"# Teil {i}\n\nInhalt {i} über Bergtouren.\n")
        roots.append(make_root(user, nova, base))
    return roots[0], roots[1]


def _rerun_equals_one_clean_run(crashed: FileRoot, clean: FileRoot) -> None:
    """After a crash that left the first four files learned: the rerun learns the other six,
    and the crashed root's index equals one clean run's over the same tree."""
    rerun = index_root_run(root_id=crashed.pk)
    assert rerun.counts["new"] == 6 and rerun.counts["unchanged"] == 4
    index_root_run(root_id=clean.pk)
    assert index_snapshot(crashed) == index_snapshot(clean)
    assert IndexEntry.objects.filter(root=crashed).count() == 10


def test_crash_in_the_middle_then_rerun_equals_one_clean_run(
    tmp_path: Path, user: User, nova: Character, settings: Any
) -> None:
    crashed, clean = _two_equal_trees(tmp_path, user, nova)
    # Learning batches of four files: the run dies once the first batch is committed.
    settings.FILES_LEARN_BATCH_FILES = 4
    WRITES["n"] = 0
    settings.FILES_TEST_HOOK = "files.tests.test_watcher:die_after_four_writes"
    with pytest.raises(Killed):
        index_root_run(root_id=crashed.pk)
    assert IndexEntry.objects.filter(root=crashed).count() == 4  # whole files only
    settings.FILES_TEST_HOOK = ""
    _rerun_equals_one_clean_run(crashed, clean)


def test_a_crash_inside_a_batch_write_leaves_none_of_that_batch(
    tmp_path: Path, user: User, nova: Character, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch of files is one transaction: dying between its entry rows and its block rows
    leaves no entry without blocks, only the batches committed before."""
    crashed, clean = _two_equal_trees(tmp_path, user, nova)
    settings.FILES_LEARN_BATCH_FILES = 4
    real = IndexBlock.objects.bulk_create
    batches = {"n": 0}

    def dies_in_the_second_batch(objs: Any, *args: Any, **kwargs: Any) -> Any:
        batches["n"] += 1
        if batches["n"] == 2:
            raise Killed
        return real(objs, *args, **kwargs)

    monkeypatch.setattr(IndexBlock.objects, "bulk_create", dies_in_the_second_batch)
    with pytest.raises(Killed):
        index_root_run(root_id=crashed.pk)
    learned = IndexEntry.objects.filter(root=crashed)
    assert learned.count() == 4
    assert all(e.blocks.count() == len(e.block_map) for e in learned)
    monkeypatch.setattr(IndexBlock.objects, "bulk_create", real)
    _rerun_equals_one_clean_run(crashed, clean)


def test_two_runs_at_once_cannot_double_index(root: FileRoot) -> None:
    other = connections.create_connection("default")
    try:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_lock(%s, %s)", [run_module.LOCK_CLASS, root.pk])
        assert index_root_run(root_id=root.pk).outcome == "laeuft_schon"
        assert not IndexEntry.objects.filter(root=root).exists()
    finally:
        with other.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [run_module.LOCK_CLASS, root.pk])
        other.close()
    assert index_root_run(root_id=root.pk).outcome == "fertig"


@pytest.fixture
def read_only_tree(tree: Path) -> Iterator[Path]:
    write(tree, ".versteckt/geheim.md", "# nicht betreten\n")
    os.symlink("/etc", tree / "nach_aussen")
    paths = sorted(tree.rglob("*"), key=lambda p: len(p.parts), reverse=True)
    for p in paths:
        if not p.is_symlink():
            p.chmod(0o444 if p.is_file() else 0o555)
    tree.chmod(0o555)
    yield tree
    for p in [tree, *tree.rglob("*")]:
        if not p.is_symlink():
            p.chmod(0o755 if p.is_dir() else 0o644)


def test_read_only_guarantee(
    read_only_tree: Path, user: Any, nova: Character, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full index run against a tree made read-only at the OS level, audited three ways:
    every open under the root is read-only, and hash/mtime/mode of every entry is unchanged
    (root ignores permissions, so the audit is what proves it here)."""
    root = make_root(user, nova, read_only_tree)
    before = tree_fingerprint(read_only_tree)
    prefix = str(read_only_tree)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    opened: list[tuple[str, str]] = []
    real_os_open, real_open = os.open, builtins.open

    def audit_os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        # Files under the root are opened by name relative to a directory descriptor.
        if str(path).startswith(prefix) or kwargs.get("dir_fd") is not None:
            opened.append((str(path), "w" if flags & write_flags else "r"))
        return real_os_open(path, flags, *args, **kwargs)

    def audit_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(prefix):
            opened.append((str(file), "w" if set(mode) & set("wax+") else "r"))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", audit_os_open)
    monkeypatch.setattr(builtins, "open", audit_open)
    report = index_root_run(root_id=root.pk, full_hash=True)
    monkeypatch.undo()
    assert report.counts["new"] == 4
    assert opened and all(mode == "r" for _, mode in opened)
    assert not any(".versteckt" in p for p, _ in opened)
    assert tree_fingerprint(read_only_tree) == before


# -- failures and bad input: each is counted, the run goes on, nothing crashes -------------------


def test_unreadable_file_is_counted_and_the_run_goes_on(
    root: FileRoot, tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = scan.open_readonly

    def deny(directory: int, name: str) -> int:
        if name == "notiz.txt":
            raise PermissionError(13, "Permission denied", name)
        return real(directory, name)

    monkeypatch.setattr(scan, "open_readonly", deny)
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.counts["error_steps"] == {"nicht_lesbar": 1}
    assert report.counts["new"] == 3
    root.refresh_from_db()
    assert root.last_counts["errors"] == 1


def test_file_deleted_mid_scan(root: FileRoot, tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index_root_run(root_id=root.pk)
    real = scan.open_readonly

    def vanish(directory: int, name: str) -> int:
        if name == "notiz.txt":
            os.unlink(name, dir_fd=directory)  # deleted between the walk and the read
        return real(directory, name)

    monkeypatch.setattr(scan, "open_readonly", vanish)
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.counts["skipped"]["verschwunden"] == 1
    assert report.counts["gone"] == 1
    assert entry(root, "notiz.txt").state == "fort"


def test_bad_inputs_are_counted_and_shown(root: FileRoot, tree: Path, settings: Any) -> None:
    write(tree, "alt.txt", "Käse und Brötchen\n\nÜber Bergwege.\n".encode("cp1252"))
    write(tree, "bild.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    write(tree, "getarnt.txt", b"text\x00\x01\x02binary")
    with open(tree / "riesig.txt", "wb") as fh:  # sparse: 200 MB without using the disk
        fh.truncate(200 * 1024 * 1024)
    os.symlink(tree / "schleife_b", tree / "schleife_a")
    os.symlink(tree / "schleife_a", tree / "schleife_b")
    os.symlink(tree.parent.parent, tree / "raus")
    os.symlink(tree / "tee.md", tree / "innen.md")
    write(tree, "zeile\numbruch.md", "# Umbruch\n\nim Namen\n")
    write(tree, "Ünïcödé 🌲 ﬁle.md", "# Baum\n\nEmoji im Namen\n")
    (tree / "sub").mkdir()
    os.mkfifo(tree / "sub" / "rohr.txt")
    report = index_root_run(root_id=root.pk)
    skipped = report.counts["skipped"]
    assert skipped["format"] == 1
    assert skipped["binaer"] == 1
    assert skipped["zu_gross"] == 1
    assert skipped["link_schleife"] == 2
    assert skipped["link_nach_aussen"] == 1
    assert skipped["link_innen"] == 1
    assert skipped["keine_datei"] == 1
    assert report.counts["notes"]["nicht_utf8"] == 1
    assert report.counts["errors"] == 0
    assert "Käse" in entry(root, "alt.txt").search_text
    assert entry(root, "zeile\numbruch.md").topic == "Umbruch"
    assert entry(root, "Ünïcödé 🌲 ﬁle.md").topic == "Baum"
    assert report.counts["new"] == 4 + 3


def test_vanished_root_directory_keeps_rows_and_reports(root: FileRoot, tree: Path) -> None:
    index_root_run(root_id=root.pk)
    shutil.rmtree(tree)
    report = index_root_run(root_id=root.pk)
    assert report.outcome == "verzeichnis_fehlt"
    root.refresh_from_db()
    assert "nicht mehr da" in root.last_error
    assert root.last_counts["root_missing"] is True
    assert IndexEntry.objects.filter(root=root, state="vorhanden").count() == 4


def test_llm_answer_that_is_not_json_falls_back_to_extraction(
    root: FileRoot, fake_llm: FakeOpenAI
) -> None:
    fake_llm.set_default("Gerne! Hier ist die Zusammenfassung: Tee ist gut.")
    report = index_root_run(root_id=root.pk)
    assert report.counts["notes"]["llm_kein_json"] == 4
    assert report.counts["new"] == 4 and report.counts["errors"] == 0
    assert entry(root, "tee.md").topic == "Tee"
    request = fake_llm.chat_requests()[0]
    assert request.get("response_format", {}).get("type") == "json_object"


def test_llm_json_answer_is_used(root: FileRoot, fake_llm: FakeOpenAI) -> None:
    fake_llm.set_default(
        json.dumps({"topic": "Teekunde", "summary": "Über Tee.", "keywords": ["tee", None]})
    )
    report = index_root_run(root_id=root.pk)
    # keywords with a null inside is a wrong type: named, and the file is still enriched.
    assert report.counts["notes"]["llm_feld_falscher_typ"] == 4
    fake_llm.set_default(json.dumps({"topic": "Teekunde", "summary": "Über Tee.", "keywords": []}))
    (root_path := Path(root.path)).joinpath("neu.md").write_text("# Neu\n\nx\n")
    index_root_run(root_id=root.pk)
    assert entry(root, "neu.md").topic == "Teekunde"
    assert root_path.exists()


def test_stat_mode_unchanged_helper_sees_a_chmod(tmp_path: Path) -> None:
    """The audit helper itself can fail: a changed mode shows up in the fingerprint."""
    write(tmp_path, "a.md", "x")
    before = tree_fingerprint(tmp_path)
    (tmp_path / "a.md").chmod(stat.S_IRUSR)
    assert tree_fingerprint(tmp_path) != before
