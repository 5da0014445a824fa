"""A plain topic that only a heading names is found and cited to its section (issue 9):
block-level rows (each section with its own text, keywords — its heading among them — and
embedding) let a question reach the section that answers it, while the file's ~8 keywords
never name it. "Nothing relevant" stays expressible."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from conversation.models import Character
from files.models import FileRoot
from files.retrieval import records_for_turn
from files.tests.corpus import CORPUS, make_root
from novaberg.embeddings import embed_one

GLAZES = """# Glasuren für Steinzeug

Rezepte und Erfahrungen mit Glasuren für den Glasurbrand bei 1240 Grad.

## Grundrezept

Feldspat, Quarz, Kaolin und Kalk bilden die Basis jeder Glasur.
Die Rohstoffe werden trocken gewogen und dann mit Wasser angerührt.

## Seladon

Zwei Prozent Eisenoxid in der Grundglasur ergeben im Reduktionsbrand ein helles Graugrün.
Die Farbe ist dort am kräftigsten, wo die Glasur dick steht.

## Tauchen

Die Glasur soll die Dicke von Sahne haben; drei Sekunden tauchen genügt.
"""

PATH = "toepfern/glasuren.md"


def _section_lines(text: str, heading: str) -> str:
    """The section's lines as a person counts them: its heading to its last non-blank line."""
    lines = text.splitlines()
    start = lines.index(heading)
    end = next((n for n in range(start + 1, len(lines)) if lines[n].startswith("#")), len(lines))
    while not lines[end - 1].strip():
        end -= 1
    return f"{start + 1}-{end}"


SELADON_LINES = _section_lines(GLAZES, "## Seladon")


@pytest.fixture
def root(user: User, nova: Character, tmp_path: Path) -> FileRoot:
    corpus = {**CORPUS, PATH: GLAZES}
    return make_root(user=user, character=nova, directory=tmp_path / "ablage", corpus=corpus)


def _ask(user: User, nova: Character, text: str) -> Any:
    return records_for_turn(user=user, character=nova, query_vector=embed_one(text), text=text)


@pytest.mark.django_db
def test_heading_only_topic_is_found_and_cited_to_its_section(
    root: FileRoot, user: User, nova: Character
) -> None:
    assert SELADON_LINES == "10-13"
    result = _ask(user, nova, "Was weißt du über Seladon?")
    assert result.records, result.log
    top = result.records[0]
    assert top["path"] == PATH
    assert top["citation"] == f"{PATH}:{SELADON_LINES}"
    assert top["heading"] == "Seladon"
    # The excerpt is that section's text, not the file's first paragraph.
    assert "Zwei Prozent Eisenoxid" in top["excerpt"]
    assert "Feldspat" not in top["excerpt"]
    assert result.log["block_lexical_passed"] >= 1


@pytest.mark.django_db
def test_search_api_returns_the_section(root: FileRoot, api: APIClient) -> None:
    response = api.get("/api/search/", {"q": "Seladon"})
    assert response.status_code == 200
    first = response.json()["results"][0]
    assert first["path"] == PATH
    assert first["lines"] == SELADON_LINES
    assert first["citation"] == f"{PATH}:{SELADON_LINES}"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        "Was weißt du über die Geschichte des Fußballs?",
        "Wie funktionieren Quantencomputer?",
        "Wie war das Wetter gestern?",
        "Erzähl mir einen Witz über Katzen.",
        "Meine Schwester hat morgen Geburtstag.",
    ],
)
def test_block_rows_keep_nothing_relevant_expressible(
    root: FileRoot, user: User, nova: Character, text: str
) -> None:
    result = _ask(user, nova, text)
    assert result.records == [], result.log
    # The block rows were searched, and held by their own floor.
    assert result.log["block_pair_rows"] > 0
    assert result.log["block_dense_passed"] == 0


@pytest.mark.django_db
def test_a_section_question_is_cited_to_that_section_in_both_block_plans(
    root: FileRoot, user: User, nova: Character, settings: Any
) -> None:
    text = "Wie dick soll die Glasur beim Tauchen sein?"
    exact = _ask(user, nova, text)
    assert exact.log["block_dense_plan"] == "exakt_gefiltert"
    assert exact.records[0]["citation"] == f"{PATH}:{_section_lines(GLAZES, '## Tauchen')}"
    # A pair with more block rows than the switch point goes through HNSW; same citation.
    settings.FILES_EXACT_SCAN_MAX_ROWS = 3
    hnsw = _ask(user, nova, text)
    assert hnsw.log["block_dense_plan"] == "hnsw"
    assert hnsw.records[0]["citation"] == exact.records[0]["citation"]


@pytest.mark.django_db
def test_another_pairs_heading_is_not_searched(
    root: FileRoot, user: User, other_user: User, nova: Character
) -> None:
    root.state = FileRoot.State.SUSPENDED
    root.save(update_fields=["state"])
    assert _ask(user, nova, "Was weißt du über Seladon?").records == []
    assert _ask(other_user, nova, "Was weißt du über Seladon?").records == []
