"""The gate's sentences count right: one file, one row, one line (issue: natural German)."""

from __future__ import annotations

import pytest

from files.agent.validate import describe_dry_run, index_rows


@pytest.mark.parametrize(
    ("files", "expected"),
    [(1, "1 Datei würde ich lesen"), (2, "2 Dateien würde ich lesen"), (0, "0 Dateien")],
)
def test_the_dry_run_counts_files_in_the_right_number(files: int, expected: str) -> None:
    text = describe_dry_run("/srv/notizen", {"files": files, "total_bytes": 10, "skipped": {}})
    assert expected in text


@pytest.mark.parametrize(
    ("rows", "expected"), [(1, "seine eine Indexzeile"), (4, "seine 4 Indexzeilen")]
)
def test_index_rows_in_the_right_number(rows: int, expected: str) -> None:
    assert index_rows(rows) == expected
