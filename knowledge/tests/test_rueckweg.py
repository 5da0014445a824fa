"""The return path, offline and through the fake model: the seed's two measured runs on a
small corpus (seed 004 §4b), idempotence, the skipped and the reinforced cases, new files."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from conversation.models import Character, MemoryEntry, Session
from files.tests.watcher_helpers import tree_fingerprint
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun
from knowledge.rueckweg import rueckweg_for_memory, rueckweg_pending
from knowledge.rueckweg.planner import PURPOSE
from knowledge.selectors import memories_pending_rueckweg
from knowledge.tests.factories import promoted
from tests.fakes.openai_server import FakeOpenAI

# Seed run 1 ("Salienzschwelle und Fristen"): nothing in the library is about it.
NO_FILE = (
    "Die Salienzschwelle für Erinnerungen sollte nach Fristen gestaffelt werden, damit "
    "Einträge nicht zu früh verfallen."
)
# Seed run 2 ("Sättigung der Kennlinie"): belongs between the definition and its evidence.
KENNLINIE = (
    "Die Sättigung der Kennlinie setzt bei hoher Last früher ein, wenn der Speicher schon voll ist."
)
DEFINITION = (
    "Eine Kennlinie sättigt, wenn weitere Last die Ausgangsgröße kaum noch erhöht. "
    "Die Sättigung beginnt am Knick der Kennlinie."
)


def _lines(folder: Path, name: str) -> list[str]:
    return (folder / name).read_text().split("\n")


def test_seed_run_1_no_fitting_file_writes_nothing_and_gives_a_reason(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(session, NO_FILE)
    before = tree_fingerprint(folder)
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "keine_passende_datei"
    assert tree_fingerprint(folder) == before  # nothing written, not even touched
    assert not KnowledgeEdit.objects.filter(memory_entry=memory).exists()
    run = RueckwegRun.objects.get(pk=result.run_pk)
    assert run.abschliessend and run.planner == "offline"
    assert run.reason.startswith("Keine der 4 nächsten Dateien behandelt dieses Thema")
    # One sentence, with the figure it rests on (German decimal comma).
    assert len(re.findall(r"[.!?](\s|$)", run.reason)) == 1 and run.reason.endswith(".")
    assert re.search(r"Kosinus 0,\d{4}", run.reason)
    assert len(run.candidates) == 4


def test_seed_run_2_lands_between_definition_and_evidence(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    # The stored memory is shorter; the raw wording comes through the entry's turn.
    memory = promoted(session, KENNLINIE, text="Kennlinie sättigt früher.")
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "eingearbeitet", result
    lines = _lines(folder, "kennlinie.md")
    d = lines.index(DEFINITION)
    assert lines[d + 1 : d + 5] == ["", f"[i1>] {KENNLINIE} [<i1]", "", "### Beleg"]
    assert "Version: 1.1" in lines
    entry = KnowledgeEntry.objects.get(path="kennlinie.md")
    assert (entry.version, entry.haeufigkeit) == ("1.1", 2)
    assert entry.verstaerkt_am is not None and entry.gewicht_roh > 1.0
    edit = KnowledgeEdit.objects.get(memory_entry=memory)
    assert (edit.mark, edit.cause, edit.turn_id) == ("i1", "gedaechtnis", memory.source_turn_id)
    assert f"+[i1>] {KENNLINIE} [<i1]" in edit.diff
    run = RueckwegRun.objects.get(pk=result.run_pk)
    assert run.details["ort"] == {
        "anker": "Definition",
        "position": "nach",
        "regel": "nach_bestem_abschnitt",
    }
    assert run.details["text_quelle"] == "turn"
    # The other files were not touched.
    assert KnowledgeEntry.objects.exclude(path="kennlinie.md").filter(version="1.0").count() == 3


def test_two_runs_on_one_memory_write_once(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(session, KENNLINIE)
    first = rueckweg_for_memory(memory_entry_id=memory.pk)
    after_first = (folder / "kennlinie.md").read_bytes()
    second = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert (first.outcome, second.outcome) == ("eingearbeitet", "schon_erledigt")
    assert (folder / "kennlinie.md").read_bytes() == after_first
    assert KnowledgeEdit.objects.filter(memory_entry=memory).count() == 1
    assert KnowledgeEntry.objects.get(path="kennlinie.md").haeufigkeit == 2
    assert RueckwegRun.objects.filter(memory_key=memory.pk).count() == 2  # one log row per run
    assert RueckwegRun.objects.filter(memory_key=memory.pk, abschliessend=True).count() == 1
    assert memory.pk not in memories_pending_rueckweg()


def test_a_records_memory_is_skipped(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(
        session,
        KENNLINIE,
        provenance={"quelle": "aufzeichnungen", "citations": ["notizen/kennlinie.md:3-9"]},
    )
    before = tree_fingerprint(folder)
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "uebersprungen_aufzeichnungen"
    assert tree_fingerprint(folder) == before
    assert RueckwegRun.objects.get(pk=result.run_pk).abschliessend


def test_content_that_adds_nothing_only_reinforces(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(
        session, "Eine Kennlinie sättigt, wenn weitere Last die Ausgangsgröße kaum noch erhöht."
    )
    before = tree_fingerprint(folder)
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "verstaerkt"
    assert tree_fingerprint(folder) == before
    entry = KnowledgeEntry.objects.get(path="kennlinie.md")
    assert (entry.haeufigkeit, entry.version) == (2, "1.0") and entry.verstaerkt_am is not None


def test_a_short_term_memory_is_not_taken(corpus: dict[str, Any], session: Session) -> None:
    memory = promoted(session, KENNLINIE, kind=MemoryEntry.Kind.SHORT, promoted_at=None)
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "nicht_langzeit"
    assert not RueckwegRun.objects.get(pk=result.run_pk).abschliessend
    assert memory.pk not in memories_pending_rueckweg()
    assert rueckweg_for_memory(memory_entry_id=10**9).step == "kein_eintrag"


def test_evidence_as_best_match_puts_the_content_before_it(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    memory = promoted(
        session,
        "Gemessen im April: ab 90 Prozent Last blieb die Ausgangsgröße der Kennlinie gleich.",
    )
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    run = RueckwegRun.objects.get(pk=result.run_pk)
    assert result.outcome == "eingearbeitet", (run.reason, run.candidates, run.details)
    lines = _lines(folder, "kennlinie.md")
    assert lines[lines.index("### Beleg") - 2].startswith("[i1>] Gemessen im April")
    assert RueckwegRun.objects.get(pk=result.run_pk).details["ort"]["regel"] == "vor_beleg"


def test_a_subject_that_comes_back_starts_a_new_file(
    corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    first = promoted(
        session,
        "Die Fahrradkette muss nach Regenfahrten sofort gereinigt und mit Kettenöl "
        "geschmiert werden.",
    )
    second = promoted(
        session, "Nach jeder Regenfahrt reinige ich die Fahrradkette und schmiere sie mit Kettenöl."
    )
    one = rueckweg_for_memory(memory_entry_id=first.pk)
    assert one.outcome == "keine_passende_datei"
    two = rueckweg_for_memory(memory_entry_id=second.pk)
    assert two.outcome == "neue_datei", two
    assert two.entry_id is not None
    entry = KnowledgeEntry.objects.get(pk=two.entry_id)
    assert entry.typ == "gespraech" and entry.version == "1.0"
    text = (folder / entry.path).read_text()
    assert text.startswith("# Fahrradkette, Kettenöl\n\nVersion: 1.0\n\n## AKTUELL\n\n")
    assert text.index("sofort gereinigt") < text.index("Nach jeder Regenfahrt")
    # A third memory on the subject is worked into that file, not into a new one.
    third = promoted(
        session,
        "Die Fahrradkette quietscht, wenn das Kettenöl nach dem Regen fehlt und Sand daran klebt.",
    )
    three = rueckweg_for_memory(memory_entry_id=third.pk)
    assert (three.outcome, three.path) == ("eingearbeitet", entry.path)


def test_pending_runs_and_the_command_print_one_line_per_memory(
    corpus: dict[str, Any], session: Session
) -> None:
    a = promoted(session, NO_FILE)
    b = promoted(session, KENNLINIE)
    assert memories_pending_rueckweg() == [a.pk, b.pk]
    out = StringIO()
    call_command("rueckweg", stdout=out)
    lines = out.getvalue().strip().split("\n")
    assert lines[0].startswith(f"Gedächtnis {a.pk}: keine_passende_datei – Keine der 4")
    assert lines[1].startswith(
        f"Gedächtnis {b.pk}: eingearbeitet – kennlinie.md [i1>], Version 1.1"
    )
    assert memories_pending_rueckweg() == []
    out = StringIO()
    call_command("rueckweg", stdout=out)
    assert out.getvalue().strip() == "Keine offenen Einträge für den Rückweg."
    assert rueckweg_pending() == []


def test_the_beat_entry_belongs_to_the_app() -> None:
    from novaberg.celery import app

    app.loader.import_default_modules()  # what a worker does at start: autodiscovery
    entry = app.conf.beat_schedule["knowledge-rueckweg"]
    assert entry["task"] == "knowledge.tasks.rueckweg_pending"
    assert "knowledge.tasks.rueckweg_memory" in app.tasks


# --- the model planner, through the fake OpenAI-compatible server ------------------------------


def _planner(body: dict) -> bool:
    return "Wissensdateien" in (body.get("messages") or [{}])[0].get("content", "")


def test_the_model_planner_decides_on_the_summaries(
    fake_llm: FakeOpenAI, corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    target = corpus["kennlinie.md"].pk
    answer = {
        "entscheidung": "datei",
        "datei": target,
        "begruendung": "Gehört zur Kennlinie.",
        "anker": "Definition",
        "position": "nach",
    }
    fake_llm.add(json.dumps(answer), match=_planner)
    memory = promoted(session, KENNLINIE)
    result = rueckweg_for_memory(memory_entry_id=memory.pk)
    assert result.outcome == "eingearbeitet" and fake_llm.pending() == 0
    run = RueckwegRun.objects.get(pk=result.run_pk)
    assert (run.planner, run.reason, run.details["ort"]["regel"]) == (
        "modell",
        "Gehört zur Kennlinie.",
        "planer",
    )
    messages = fake_llm.chat_requests()[-1]["messages"]
    assert messages[0]["role"] == "system" and "keine_passende_datei" in messages[0]["content"]
    user = messages[1]["content"]
    # The raw wording and every candidate's summary are in the request, as data.
    assert user.index("<daten>") < user.index(KENNLINIE) < user.index("</daten>")
    assert (
        f"[id={target}] Datei: kennlinie.md" in user and "Zusammenfassung: Eine Kennlinie" in user
    )


def test_the_model_may_answer_no_file(
    fake_llm: FakeOpenAI, corpus: dict[str, Any], folder: Path, session: Session
) -> None:
    fake_llm.add(
        json.dumps(
            {
                "entscheidung": "keine_passende_datei",
                "begruendung": "Keine Datei behandelt Fristen.",
            }
        ),
        match=_planner,
    )
    before = tree_fingerprint(folder)
    result = rueckweg_for_memory(memory_entry_id=promoted(session, KENNLINIE).pk)
    assert (result.outcome, result.reason) == (
        "keine_passende_datei",
        "Keine Datei behandelt Fristen.",
    )
    assert tree_fingerprint(folder) == before


@pytest.mark.parametrize(
    ("answer", "status", "step"),
    [
        ("Ich würde kennlinie.md nehmen.", 200, "kein_json"),
        ('["datei"]', 200, "kein_objekt"),
        ('{"entscheidung": "datei", "begruendung": "x", "datei": 999999}', 200, "datei_unbekannt"),
        ('{"entscheidung": "datei", "begruendung": "x", "datei": "3"}', 200, "kennung_unlesbar"),
        ('{"entscheidung": "datei", "begruendung": null, "datei": 1}', 200, "feld_fehlt"),
        ('{"entscheidung": "vielleicht", "begruendung": "x"}', 200, "entscheidung_unbekannt"),
        ("", 500, "llm_http_fehler"),
    ],
    ids=["prosa", "liste", "fremde_datei", "kennung_text", "null", "unbekannt", "http_500"],
)
def test_a_bad_model_answer_falls_back_to_the_offline_planner(
    fake_llm: FakeOpenAI,
    corpus: dict[str, Any],
    folder: Path,
    session: Session,
    answer: str,
    status: int,
    step: str,
) -> None:
    fake_llm.add(answer, status=status, match=_planner)
    result = rueckweg_for_memory(memory_entry_id=promoted(session, KENNLINIE).pk)
    run = RueckwegRun.objects.get(pk=result.run_pk)
    assert (run.planner, run.planner_step) == ("ersatz_offline", step)
    assert result.outcome == "eingearbeitet"  # the offline rule decided, and decided right
    assert "[i1>]" in (folder / "kennlinie.md").read_text()


def test_the_offline_backend_answers_the_planner_purpose() -> None:
    from novaberg.llm import offline_handler

    assert offline_handler(PURPOSE) is not None


def test_another_pairs_library_is_never_a_candidate(
    corpus: dict[str, Any], other_user: Any, nova: Character, zone: Path
) -> None:
    from tests.factories import SessionFactory

    theirs = SessionFactory(user=other_user, character=nova)
    result = rueckweg_for_memory(memory_entry_id=promoted(theirs, KENNLINIE).pk)
    assert result.outcome == "keine_passende_datei"
    assert RueckwegRun.objects.get(pk=result.run_pk).candidates == []
