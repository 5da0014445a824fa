"""The [AUFZEICHNUNGEN] block: framing and entry format (its place in the prompts is tested in
conversation/tests/test_context.py and tests/test_pipeline.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character
from files.blocks import records_block
from files.retrieval import records_for_turn
from files.tests.corpus import make_root
from novaberg.embeddings import embed_one


def _record(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "path": "plan.md",
        "lines": "13-17",
        "citation": "plan.md:13-17",
        "channel": "beide",
        "strength": "stark",
        "size": 2048,
        "eigentum": "nutzer",
        "archived": False,
        "concept": False,
        "summary": "Der Umzug in die neue Wohnung ist am 14. Juni.",
        "excerpt": "Innerhalb von zwei Wochen beim Bürgeramt ummelden.",
        "changed": False,
        "cosine": 0.49,
    }
    base.update(over)
    return base


def test_no_records_no_block() -> None:
    assert records_block([]) == ""


def test_framing_says_records_not_memory_may_be_wrong_and_name_the_citation() -> None:
    block = records_block([_record()])
    lines = block.splitlines()
    assert lines[0] == "[AUFZEICHNUNGEN]"
    framing = lines[1]
    assert "nicht deine Erinnerung und nicht dein Wissen" in framing
    assert "falsch oder veraltet" in framing
    assert "In den Unterlagen steht" in framing and "Fundstelle" in framing
    assert "Widerspricht eine Aufzeichnung deiner Erinnerung, sag beides" in framing
    assert "[GEDAECHTNIS]" not in block


def test_entry_carries_citation_strength_size_owner_summary_and_excerpt() -> None:
    block = records_block([_record()])
    entry = block.split("\n1. ", 1)[1]
    head = entry.splitlines()[0]
    assert head.startswith("Fundstelle: plan.md:13-17")
    assert "Treffer: stark" in head
    assert "Größe: 2,0 KB" in head
    assert "Herkunft: Material der Person" in head
    assert "Zusammenfassung: Der Umzug in die neue Wohnung ist am 14. Juni." in entry
    assert "Auszug: „Innerhalb von zwei Wochen beim Bürgeramt ummelden.“" in entry
    assert "archiviert" not in entry


def test_archived_concept_is_labelled_and_concepts_are_no_proof() -> None:
    block = records_block(
        [_record(path="archive/k.md", citation="archive/k.md:1-4", archived=True, concept=True)]
    )
    assert "Status: archiviert — abgelöst, nicht geltend" in block
    assert "kein Beleg dafür, dass etwas existiert" in block
    # The note stands before the entries, as part of the framing.
    assert block.index("kein Beleg") < block.index("1. Fundstelle")


def test_figur_material_is_novas_own_earlier_work_with_citation() -> None:
    block = records_block([_record(eigentum="figur")])
    assert "Herkunft: eigene Funde (dein früheres Material)" in block
    assert "Fundstelle: plan.md:13-17" in block
    assert "keine Erinnerung" in block


def test_entries_are_numbered_in_rank_order() -> None:
    block = records_block([_record(), _record(citation="b.md:1-2", strength="schwach")])
    assert block.index("1. Fundstelle: plan.md:13-17") < block.index("2. Fundstelle: b.md:1-2")
    assert "Treffer: schwach" in block


@pytest.mark.django_db
def test_block_from_a_real_turn(user: Any, nova: Character, tmp_path: Path) -> None:
    make_root(user=user, character=nova, directory=tmp_path / "ablage")
    text = "Wie heiß ist der Schrühbrand?"
    result = records_for_turn(user=user, character=nova, query_vector=embed_one(text), text=text)
    block = records_block(result.records)
    assert "1. Fundstelle: toepfern/brennen.md:5-9" in block
    assert "Der erste Brand ist der Schrühbrand bei 950 Grad." in block


@pytest.mark.django_db
def test_changed_file_is_said_in_the_block(user: Any, nova: Character, tmp_path: Path) -> None:
    make_root(user=user, character=nova, directory=tmp_path / "ablage")
    target = tmp_path / "ablage" / "toepfern" / "brennen.md"
    target.write_text(target.read_text().replace("950", "1000"))
    text = "Wie heiß ist der Schrühbrand?"
    result = records_for_turn(user=user, character=nova, query_vector=embed_one(text), text=text)
    assert result.records[0]["changed"] is True
    assert "seit dem Indexieren geändert" in records_block(result.records)
