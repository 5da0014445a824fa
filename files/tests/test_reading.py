"""Reads stay inside the pair's active roots and never write (issue 5)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from conversation.models import Character
from files import reading
from files.models import FileRoot, IndexEntry
from files.tests.corpus import make_root


@pytest.fixture
def root(user: Any, nova: Character, tmp_path: Path) -> FileRoot:
    return make_root(user=user, character=nova, directory=tmp_path / "ablage")


@pytest.mark.django_db
def test_zeilen_lesen_reads_the_range(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.zeilen_lesen(user=user, character=nova, path="plan.md", start=13, end=14)
    assert result.ok and result.citation == "plan.md:13-14"
    assert result.text.startswith("## 3. Ummelden")
    assert not result.changed and not result.cut


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["../geheim.txt", "../../etc/passwd", "/etc/passwd"])
def test_dotdot_and_absolute_paths_are_refused(
    root: FileRoot, user: Any, nova: Character, tmp_path: Path, path: str
) -> None:
    (tmp_path / "geheim.txt").write_text("geheim")
    result = reading.zeilen_lesen(user=user, character=nova, path=path, start=1)
    assert result.status == "fehler" and result.step == "ausserhalb"
    assert "geheim" not in result.text and "root" not in result.text


@pytest.mark.django_db
def test_symlink_out_of_the_root_is_refused(
    root: FileRoot, user: Any, nova: Character, tmp_path: Path
) -> None:
    (tmp_path / "draussen.txt").write_text("draußen")
    os.symlink(tmp_path / "draussen.txt", Path(root.path) / "link.txt")
    result = reading.zeilen_lesen(user=user, character=nova, path="link.txt", start=1)
    assert result.step == "ausserhalb" and result.text == ""


@pytest.mark.django_db
def test_suspended_root_is_not_read(root: FileRoot, user: Any, nova: Character) -> None:
    root.state = FileRoot.State.SUSPENDED
    root.save(update_fields=["state"])
    result = reading.zeilen_lesen(
        user=user, character=nova, path="plan.md", start=1, root_id=root.id
    )
    assert result.step == "wurzel_unbekannt" and result.text == ""
    assert reading.zeilen_lesen(user=user, character=nova, path="plan.md", start=1).step == (
        "ausserhalb"
    )


@pytest.mark.django_db
def test_another_pairs_root_is_invisible(root: FileRoot, other_user: Any, nova: Character) -> None:
    result = reading.zeilen_lesen(
        user=other_user, character=nova, path="plan.md", start=1, root_id=root.id
    )
    assert result.step == "wurzel_unbekannt" and result.text == ""
    grep = reading.datei_grep(user=other_user, character=nova, pattern="Bürgeramt")
    assert grep.matches == []


@pytest.mark.django_db
def test_hidden_files_are_not_entered(root: FileRoot, user: Any, nova: Character) -> None:
    (Path(root.path) / ".env").write_text("SECRET=1")
    result = reading.zeilen_lesen(user=user, character=nova, path=".env", start=1)
    assert result.step == "verborgen" and result.text == ""


@pytest.mark.django_db
@override_settings(FILES_READ_MAX_LINES=5)
def test_reads_are_bounded_and_say_so(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.zeilen_lesen(user=user, character=nova, path="plan.md", start=1, end=100)
    assert result.cut is True
    assert (result.line_start, result.line_end) == (1, 5)
    assert len(result.text.splitlines()) == 5


@pytest.mark.django_db
def test_changed_file_is_reported_and_the_hash_rechecked(
    root: FileRoot, user: Any, nova: Character
) -> None:
    target = Path(root.path) / "plan.md"
    target.write_text(target.read_text() + "\nNeu: Schlüssel abgeben.\n")
    result = reading.zeilen_lesen(user=user, character=nova, path="plan.md", start=1)
    assert result.changed is True
    entry = IndexEntry.objects.get(root=root, rel_path="plan.md")
    assert result.current_hash != entry.inhalt_hash
    assert "seit dem Indexieren geändert" in reading.changed_note(result)


@pytest.mark.django_db
def test_block_lesen_by_section_number(root: FileRoot, user: Any, nova: Character) -> None:
    entry = IndexEntry.objects.get(root=root, rel_path="plan.md")
    result = reading.block_lesen(user=user, character=nova, entry=entry, block=3)
    assert result.citation == "plan.md:13-17"
    assert result.extra["heading"] == "3. Ummelden"


@pytest.mark.django_db
def test_three_zoom_levels(root: FileRoot, user: Any, nova: Character) -> None:
    entry = IndexEntry.objects.get(root=root, rel_path="plan.md")
    summary = reading.zoom(user=user, character=nova, entry=entry, level=1)
    assert summary.text.startswith("Umzugsplan")
    outline = reading.zoom(user=user, character=nova, entry=entry, level=2)
    assert "4. 3. Ummelden — Zeilen 13-17" in outline.text
    lines = reading.zoom(user=user, character=nova, entry=entry, level=3)
    assert lines.text.startswith("# Umzugsplan")


@pytest.mark.django_db
def test_grep_exact_then_casefolded_with_line_numbers(
    root: FileRoot, user: Any, nova: Character
) -> None:
    exact = reading.datei_grep(user=user, character=nova, pattern="Schrühbrand")
    assert exact.mode == "exakt"
    assert {(m["path"], m["line"]) for m in exact.matches} == {
        ("toepfern/brennen.md", 5),
        ("toepfern/brennen.md", 7),
    }
    folded = reading.datei_grep(user=user, character=nova, pattern="SCHRÜHBRAND")
    assert folded.mode == "gross_klein_egal" and len(folded.matches) == 2


@pytest.mark.django_db
@override_settings(FILES_GREP_MAX_LINES=3)
def test_grep_stops_at_the_line_cap(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.datei_grep(user=user, character=nova, pattern="e")
    assert len(result.matches) == 3 and result.cut and result.cut_reason == "zeilen"


@pytest.mark.django_db
@override_settings(FILES_GREP_TIME_LIMIT_S=0.0)
def test_grep_stops_at_the_time_limit(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.datei_grep(user=user, character=nova, pattern="zzz-nicht-da")
    assert result.cut and result.cut_reason == "zeit"


def test_reading_module_never_opens_for_writing() -> None:
    source = Path(reading.__file__).read_text()
    for forbidden in ("O_WRONLY", "O_RDWR", "O_CREAT", "write_text", "write_bytes", '"w"', '"a"'):
        assert forbidden not in source
