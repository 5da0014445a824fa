"""Every read is bounded in characters as well as lines (issue 27; DESIGN.md "Files").

One 8 MB line gave a 5.2 MB API answer and a composer prompt of 5.24 million characters: a read
now stops at FILES_READ_MAX_CHARS (inside the line), says "gekürzt", and each
[AUFZEICHNUNGEN] record shows at most FILES_RECORD_MAX_CHARS of its text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import Character
from files import reading
from files.blocks import records_block
from files.models import FileRoot
from files.tests.watcher_helpers import make_root, write
from files.watcher import index_root_run

pytestmark = pytest.mark.django_db

LONG = "Wort " * 400_000  # one line of 2,000,000 characters


@pytest.fixture
def root(tmp_path: Path, user: Any, nova: Character, settings: Any) -> FileRoot:
    base = tmp_path / "rand" / "notizen"
    write(base, "lang.txt", f"Kopf\n{LONG}\nFuß\n")
    write(base, "kurz.md", "# Kurz\n\nZwei Zeilen.\n")
    settings.FILES_BOUNDARY = [str(tmp_path / "rand")]
    root = make_root(user, nova, base)
    assert index_root_run(root_id=root.pk).outcome == "fertig"
    return root


def test_one_long_line_is_cut_in_characters_and_says_so(
    root: FileRoot, user: Any, nova: Character, settings: Any
) -> None:
    result = reading.zeilen_lesen(user=user, character=nova, path="lang.txt", start=2, end=3)

    assert result.ok and result.cut
    assert len(result.text) == settings.FILES_READ_MAX_CHARS
    assert result.text.startswith("Wort Wort")
    assert (result.line_start, result.line_end) == (2, 2)  # line 2 shown in part
    assert "Gekürzt" in result.message and str(settings.FILES_READ_MAX_CHARS) in result.message


def test_a_read_over_the_limit_stops_after_the_last_whole_line(
    root: FileRoot, user: Any, nova: Character
) -> None:
    # Line 1 fits, line 2 does not: the read ends with line 1 and says where to go on, so a
    # reader paging from line_end + 1 misses nothing.
    result = reading.zeilen_lesen(user=user, character=nova, path="lang.txt", start=1, end=3)

    assert result.ok and result.cut
    assert result.text == "Kopf" and (result.line_start, result.line_end) == (1, 1)
    assert "Gekürzt" in result.message and "ab Zeile 2" in result.message


def test_a_short_read_is_whole_and_says_nothing(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.zeilen_lesen(user=user, character=nova, path="kurz.md", start=1)
    assert result.ok and not result.cut and result.message == ""
    assert result.text == "# Kurz\n\nZwei Zeilen."


def test_the_viewer_api_answers_a_bounded_text_with_gekuerzt(
    root: FileRoot, api: APIClient, settings: Any
) -> None:
    settings.FILES_READ_MAX_CHARS = 5000
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "lang.txt", "lines": "2-2"})

    assert response.status_code == 200, response.content[:300]
    body = response.json()
    assert len(body["text"]) == 5000 and body["cut"] is True
    assert "Gekürzt" in body["note"]
    assert len(response.content) < 7000


def test_grep_shows_a_long_matching_line_in_part_and_says_so(
    root: FileRoot, user: Any, nova: Character
) -> None:
    found = reading.datei_grep(user=user, character=nova, pattern="Wort")
    assert found.status == "ok" and len(found.matches) == 1
    match = found.matches[0]
    assert match["cut"] is True and match["text"].endswith("(gekürzt)")
    assert len(match["text"]) < 400


def test_zoom_text_is_bounded(root: FileRoot, user: Any, nova: Character, settings: Any) -> None:
    entry = root.entries.get(rel_path="lang.txt")
    entry.summary = "Zusammenfassung " * 10_000
    entry.save(update_fields=["summary"])
    result = reading.zoom(user=user, character=nova, entry=entry, level=1)
    assert result.ok and result.cut and len(result.text) == settings.FILES_READ_MAX_CHARS
    assert "Gekürzt" in result.message


def _record(**over: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "citation": "lang.txt:2-2",
        "path": "lang.txt",
        "lines": "2-2",
        "excerpt_lines": "2-2",
        "strength": "stark",
        "size": 8 * 1024 * 1024,
        "eigentum": "nutzer",
        "summary": "Z" * 50_000,
        "excerpt": "W" * 8_000_000,
    }
    record.update(over)
    return record


def test_the_records_block_caps_each_record_and_says_gekuerzt(settings: Any) -> None:
    block = records_block([_record(), _record(citation="b.txt:1-1", path="b.txt")])

    # Two records of 8 million characters each: the block stays a few thousand characters.
    per_record = settings.FILES_RECORD_MAX_CHARS + 600 + 1000
    assert len(block) < 2 * per_record + 2000, len(block)
    assert block.count("gekürzt auf 1500 Zeichen") == 2
    assert "Zusammenfassung der ganzen Datei lang.txt (nicht nur dieser Fundstelle; gekürzt)" in (
        block
    )
