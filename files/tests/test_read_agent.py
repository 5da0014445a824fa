"""The request-path files agent: detection, reading, "nothing fits"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conversation.agents import AgentContext, get_agent
from conversation.models import Character, Session
from conversation.pipeline import run_turn
from files.agent_read import files_read_agent
from files.agent_read.classify import classify
from files.tests.corpus import make_root


@pytest.fixture
def indexed(user: Any, nova: Character, tmp_path: Path) -> None:
    make_root(user=user, character=nova, directory=tmp_path / "ablage")


def _ctx(user: Any, nova: Character, session: Session, text: str) -> AgentContext:
    return AgentContext(user=user, character=nova, session=session, text=text)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Was steht in meinen Notizen über Sauerteig?", "notizen"),
        ("Lies mir Abschnitt 3 aus plan.md vor", "abschnitt"),
        ("Such nach Schrühbrand", "suche"),
        ("Lies mir Zeilen 13-15 aus plan.md vor", "zeilen"),
        ("Zeig mir die Gliederung von plan.md", "gliederung"),
    ],
)
def test_detect_catches_read_orders(text: str, kind: str) -> None:
    assert files_read_agent.detect(text)
    request = classify(text)
    assert request is not None and request.kind == kind


@pytest.mark.parametrize(
    "text",
    ["Wie geht es dir heute?", "Nenn mich ab jetzt Boss.", "Ich suche nach einem Geschenk"],
)
def test_plain_talk_is_not_a_read_order(text: str) -> None:
    assert not files_read_agent.detect(text)


def test_agent_is_registered() -> None:
    assert get_agent("dateien_lesen") is not None


@pytest.mark.django_db
def test_read_section_three_of_plan(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(
        _ctx(user, nova, session, "Lies mir Abschnitt 3 aus plan.md vor")
    )
    assert result.status == "abgeschlossen"
    assert result.text.startswith("Aus plan.md:13-17 („3. Ummelden“)")
    assert "Wohnungsgeberbestätigung" in result.text
    assert result.records == [
        {
            "root_id": result.records[0]["root_id"],
            "path": "plan.md",
            "lines": "13-17",
            "citation": "plan.md:13-17",
        }
    ]


@pytest.mark.django_db
def test_search_for_schruehbrand_greps_with_line_numbers(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(_ctx(user, nova, session, "Such nach Schrühbrand"))
    assert result.step == "gefunden"
    assert "toepfern/brennen.md:5" in result.text and "toepfern/brennen.md:7" in result.text
    assert [r["citation"] for r in result.records] == [
        "toepfern/brennen.md:5",
        "toepfern/brennen.md:7",
    ]


@pytest.mark.django_db
def test_notes_about_x_returns_hits_with_citations(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(
        _ctx(user, nova, session, "Was steht in meinen Notizen über Sauerteig?")
    )
    assert result.step == "gefunden"
    assert result.records[0]["path"] == "rezepte/sauerteigbrot.md"
    assert "In deinen Unterlagen steht" in result.text
    assert result.records[0]["citation"] in result.text


@pytest.mark.django_db
def test_nothing_fits_is_a_full_answer_that_says_what_was_searched(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(
        _ctx(user, nova, session, "Was steht in meinen Notizen über Quantencomputer?")
    )
    assert result.status == "abgeschlossen" and result.step == "nichts_gefunden"
    assert "Quantencomputer" in result.text
    assert "7 Dateien in einem freigegebenen Ordner" in result.text
    assert "Volltext" in result.text and "Stichwörtern" in result.text


@pytest.mark.django_db
def test_unknown_file_and_dotdot(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = files_read_agent.handle(
        _ctx(user, nova, session, "Lies mir Abschnitt 1 aus ../../etc/passwd.txt vor")
    )
    assert result.step == "datei_unbekannt"
    assert "root:" not in result.text


@pytest.mark.django_db
def test_cut_read_says_so(
    indexed: None, user: Any, nova: Character, session: Session, settings: Any
) -> None:
    settings.FILES_READ_MAX_LINES = 2
    result = files_read_agent.handle(
        _ctx(user, nova, session, "Lies mir Zeilen 1-20 aus plan.md vor")
    )
    assert "gekürzt" in result.text
    assert result.records[0]["citation"] == "plan.md:1-2"


@pytest.mark.django_db
def test_through_the_pipeline_the_result_reaches_the_turn(
    indexed: None, user: Any, nova: Character, session: Session
) -> None:
    result = run_turn(
        user=user, character=nova, session=session, text="Lies mir Abschnitt 3 aus plan.md vor"
    )
    assert result.status == "abgeschlossen"
    assert any(r["citation"] == "plan.md:13-17" for r in result.records)
