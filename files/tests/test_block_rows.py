"""What a person gets from the cited lines (issue 9, "Wrong results a user sees"): the excerpt
keeps its line breaks (CSV rows and list items stay separate lines) in the record, in the
request-path answer and in the offline composer's answer; it is bounded by lines, never cut in
the middle of a line; and a citation carries its own lines, the file's summary apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from conversation.agents import AgentContext
from conversation.models import Character, Session
from conversation.pipeline import offline
from files.agent_read import files_read_agent
from files.retrieval import EXCERPT_MAX_LINES, excerpt_of, records_for_turn
from files.tests.corpus import make_root

CSV = """Datum;Betrag;Zweck
2026-01-02;-45,10;Stromabschlag Januar
2026-01-05;1200,00;Gehalt
2026-02-02;-45,10;Stromabschlag Februar
2026-03-02;-45,10;Stromabschlag März
"""

LIST = """# Vorräte

Was im Keller lagert.

## Einkaufsliste Wochenmarkt

- Rote Bete vom Hof Lindner
- Ziegenkäse aus Kremmen
- Sauerkraut im Steinguttopf

## Werkzeug

Der Hammer liegt in der Kiste.
"""

CORPUS = {"finanzen/konto.csv": CSV, "vorraete.md": LIST}


@pytest.fixture
def indexed(user: User, nova: Character, tmp_path: Path) -> None:
    make_root(user=user, character=nova, directory=tmp_path / "ablage", corpus=CORPUS)


def _lexical(user: User, nova: Character, text: str) -> list[dict[str, Any]]:
    return records_for_turn(user=user, character=nova, query_vector=None, text=text).records


def _excerpt_lines(record: dict[str, Any]) -> list[str]:
    return [ln for ln in str(record["excerpt"]).splitlines() if ln.strip()]


@pytest.mark.django_db
def test_csv_rows_stay_separate_lines_in_the_record(
    indexed: None, user: User, nova: Character
) -> None:
    record = next(r for r in _lexical(user, nova, "Stromabschlag") if r["path"].endswith("csv"))
    lines = _excerpt_lines(record)
    assert "2026-01-02;-45,10;Stromabschlag Januar" in lines
    assert "2026-01-05;1200,00;Gehalt" in lines
    # No line holds two rows (the old excerpt joined them with a space).
    assert not any("2026-01-02" in ln and "2026-01-05" in ln for ln in lines)


@pytest.mark.django_db
def test_list_items_stay_separate_lines_in_the_record(
    indexed: None, user: User, nova: Character
) -> None:
    record = _lexical(user, nova, "Wochenmarkt")[0]
    assert record["path"] == "vorraete.md"
    lines = _excerpt_lines(record)
    assert "- Rote Bete vom Hof Lindner" in lines
    assert "- Ziegenkäse aus Kremmen" in lines
    assert "- Sauerkraut im Steinguttopf" in lines
    # The excerpt is the cited lines, nothing of another section.
    assert "Hammer" not in record["excerpt"]
    start, end = (int(n) for n in record["lines"].split("-"))
    source = LIST.splitlines()[start - 1 : end]
    assert all(line in source for line in lines)


@pytest.mark.django_db
def test_the_request_path_answer_keeps_the_lines_and_labels_the_summary(
    indexed: None, user: User, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(
        AgentContext(
            user=user,
            character=nova,
            session=session,
            text="Was steht in meinen Notizen über den Wochenmarkt?",
        )
    )
    assert result.step == "gefunden", result.text
    lines = result.text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("- vorraete.md:"))
    quoted = [ln for ln in lines[at + 1 :] if ln.startswith("  > ")]
    assert "  > - Ziegenkäse aus Kremmen" in quoted
    assert "  > - Sauerkraut im Steinguttopf" in quoted
    # The summary stands after the quoted lines, said to be about the whole file.
    summary = next(i for i, ln in enumerate(lines) if ln.startswith("  Zur ganzen Datei"))
    assert summary > max(lines.index(q) for q in quoted)
    assert lines[summary].startswith("  Zur ganzen Datei vorraete.md: ")
    assert "Was im Keller lagert." in lines[summary]
    # The old shape put the summary on the citation's own line.
    assert "Was im Keller lagert" not in lines[at]


@pytest.mark.django_db
def test_the_offline_composer_quotes_the_cited_lines_line_by_line(
    indexed: None, user: User, nova: Character
) -> None:
    records = _lexical(user, nova, "Stromabschlag")
    answer = offline.composer([], {"records": records})
    lines = answer.splitlines()
    assert any(ln.endswith(": „Datum;Betrag;Zweck") for ln in lines)
    assert "  2026-01-02;-45,10;Stromabschlag Januar" in lines
    assert "  2026-01-05;1200,00;Gehalt" in lines
    assert not any("2026-01-02" in ln and "2026-01-05" in ln for ln in lines)
    assert records[0]["citation"] in answer


def test_the_excerpt_is_bounded_by_lines_and_says_which_it_shows() -> None:
    lines = [f"Zeile {n}: " + "Wort " * 10 for n in range(1, 41)]
    excerpt = excerpt_of(lines, 5, 40)
    shown = excerpt.text.splitlines()
    assert len(shown) == EXCERPT_MAX_LINES
    assert excerpt.cut is True
    assert (excerpt.line_start, excerpt.line_end) == (5, 4 + EXCERPT_MAX_LINES)
    # Whole lines only: each shown line is a line of the file.
    assert all(s == lines[n].rstrip() for n, s in zip(range(4, 40), shown, strict=False))


def test_a_short_block_is_shown_whole_with_blank_runs_collapsed() -> None:
    lines = ["## Kopf", "", "", "eins", "zwei", "", ""]
    excerpt = excerpt_of(lines, 1, 7)
    assert excerpt.text == "## Kopf\n\neins\nzwei"
    assert excerpt.cut is False
    assert (excerpt.line_start, excerpt.line_end) == (1, 5)
