"""The write layer, tool by tool: what the person would see in the file afterwards."""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from conversation.models import Character
from files.models import FileRoot
from knowledge import document
from knowledge.models import KnowledgeEdit, KnowledgeEntry
from knowledge.tools import (
    Status,
    Step,
    block_anfuegen,
    block_einfuegen,
    block_ersetzen,
    block_lesen,
    datei_grep,
    datei_lesen,
    datei_schreiben,
    knowledge_edit_undo,
    knowledge_mark_undo,
    metadaten_aktualisieren,
    str_replace_in_block,
    struktur_analysieren,
    zeilen_lesen,
)
from knowledge.tools.edit import PERSON, Change, only_region_changed, run_edit

DEFINITION = (
    "Eine Kennlinie sättigt, wenn weitere Last die Ausgangsgröße kaum noch erhöht. "
    "Die Sättigung beginnt am Knick der Kennlinie."
)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def section(text: str, heading: str) -> str:
    """The lines of one section, heading to the line before the next heading."""
    lines = text.split("\n")
    start = lines.index(heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return "\n".join(lines[start:end])


# --- datei_schreiben ---------------------------------------------------------------------------


def test_a_new_file_has_the_template(folder: Path, user: Any, nova: Character) -> None:
    result = datei_schreiben(
        user=user,
        character=nova,
        path="themen/tee.md",
        thema="Grüner Tee",
        inhalt="Zieht drei Minuten.",
    )
    assert result.ok, result
    assert (folder / "themen" / "tee.md").read_text() == (
        "# Grüner Tee\n\nVersion: 1.0\n\n## AKTUELL\n\nZieht drei Minuten.\n"
    )
    row = KnowledgeEntry.objects.get(user=user, character=nova, path="themen/tee.md")
    assert (row.version, row.topic, row.haeufigkeit) == ("1.0", "Grüner Tee", 1)
    assert row.inhalt_hash == sha(folder / "themen" / "tee.md")
    assert row.topic_embedding is not None and row.summary == "Zieht drei Minuten."
    edit = KnowledgeEdit.objects.get(pk=result.edit_pk)
    assert (edit.tool, edit.outcome, edit.cause, edit.existed_before) == (
        "datei_schreiben", "geschrieben", "person", False,
    )  # fmt: skip
    assert "+## AKTUELL" in edit.diff and edit.hash_before == ""


def test_an_existing_file_is_overwritten_only_on_request(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    path = folder / "tee.md"
    before = path.read_bytes()
    refused = datei_schreiben(user=user, character=nova, path="tee.md", thema="Tee", inhalt="Neu.")
    assert (refused.status, refused.step) == (Status.FEHLER, Step.DATEI_EXISTIERT)
    assert path.read_bytes() == before
    done = datei_schreiben(
        user=user, character=nova, path="tee.md", thema="Tee", inhalt="Neu.", ueberschreiben=True
    )
    assert done.ok and done.version == "1.1"
    assert path.read_text() == "# Tee\n\nVersion: 1.1\n\n## AKTUELL\n\nNeu.\n"
    assert KnowledgeEdit.objects.get(pk=done.edit_pk).tool == "datei_ueberschreiben"


# --- str_replace_in_block ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alt", "step"),
    [("Zitronensaft", Step.TEXT_NICHT_GEFUNDEN), ("Kennlinie", Step.TEXT_MEHRDEUTIG)],
    ids=["null_treffer", "zwei_treffer"],
)
def test_str_replace_fails_loudly_unless_unique(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character, alt: str, step: Step
) -> None:
    path = folder / "kennlinie.md"
    before = path.read_bytes()
    edits = KnowledgeEdit.objects.count()
    result = str_replace_in_block(
        user=user, character=nova, path="kennlinie.md", block="Definition", alt=alt, neu="X"
    )
    assert (result.status, result.step) == (Status.FEHLER, step)
    assert "ändere nichts" in result.message
    assert path.read_bytes() == before  # byte-identical
    assert KnowledgeEdit.objects.count() == edits
    assert KnowledgeEntry.objects.get(path="kennlinie.md").version == "1.0"


def test_overlapping_matches_count_twice(folder: Path, user: Any, nova: Character) -> None:
    datei_schreiben(user=user, character=nova, path="a.md", thema="A", inhalt="## Teil\n\naaa")
    result = str_replace_in_block(
        user=user, character=nova, path="a.md", block="Teil", alt="aa", neu="b"
    )
    assert result.step == Step.TEXT_MEHRDEUTIG


def test_str_replace_with_one_match_marks_the_change(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    before = (folder / "kennlinie.md").read_text()
    result = str_replace_in_block(
        user=user,
        character=nova,
        path="kennlinie.md",
        block="Beleg",
        alt="12. März",
        neu="14. März",
    )
    assert result.ok and result.version == "1.1" and result.mark == "i1"
    after = (folder / "kennlinie.md").read_text()
    assert "Gemessen am [i1>]14. März[<i1]: ab 80 Prozent" in after
    changed = [
        i
        for i, (a, b) in enumerate(zip(before.split("\n"), after.split("\n"), strict=True))
        if a != b
    ]
    assert len(changed) == 2  # the version line and the one line of the match


# --- block_einfuegen / block_ersetzen / block_anfuegen -----------------------------------------


@pytest.mark.parametrize("where", [{"nach": "Definition"}, {"vor": "Beleg"}, {"nach": 3}])
def test_block_einfuegen_changes_only_its_place_and_bumps_the_version(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character, where: dict[str, Any]
) -> None:
    old = (folder / "kennlinie.md").read_text().split("\n")
    result = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Bei voller Last früher.", **where
    )
    assert result.ok, result
    new = (folder / "kennlinie.md").read_text().split("\n")
    at = old.index("### Beleg") - 1  # the blank line between definition and evidence
    assert new[at : at + 2] == ["", "[i1>] Bei voller Last früher. [<i1]"]
    assert new[new.index(DEFINITION) + 1 : new.index("### Beleg")] == [
        "", "[i1>] Bei voller Last früher. [<i1]", "",
    ]  # fmt: skip
    version_at = old.index("Version: 1.0")
    assert new[version_at] == "Version: 1.1"
    assert only_region_changed(old, new, at, at, at + 2, {version_at})
    assert KnowledgeEntry.objects.get(path="kennlinie.md").version == "1.1"


def test_block_einfuegen_needs_exactly_one_place(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    before = (folder / "kennlinie.md").read_bytes()
    unclear: list[dict[str, Any]] = [{}, {"nach": "Definition", "vor": "Beleg"}]
    for where in unclear:
        result = block_einfuegen(user=user, character=nova, path="kennlinie.md", text="x", **where)
        assert result.step == Step.ORT_UNKLAR
    for where, step in (
        ({"vor": "AKTUELL"}, Step.KOPFBEREICH),
        ({"nach": "Sättigung der Kennlinie"}, Step.KOPFBEREICH),
        ({"nach": "Gibt es nicht"}, Step.KEIN_BLOCK),
        ({"nach": 99}, Step.KEIN_BLOCK),
    ):
        result = block_einfuegen(user=user, character=nova, path="kennlinie.md", text="x", **where)
        assert result.step == step, where
    assert (folder / "kennlinie.md").read_bytes() == before


def test_a_heading_that_names_two_sections_is_not_guessed(
    folder: Path, user: Any, nova: Character
) -> None:
    datei_schreiben(
        user=user,
        character=nova,
        path="d.md",
        thema="D",
        inhalt="### Beleg\n\neins\n\n### Beleg\n\nzwei",
    )
    result = block_einfuegen(user=user, character=nova, path="d.md", text="x", vor="Beleg")
    assert result.step == Step.BLOCK_MEHRDEUTIG
    assert block_einfuegen(user=user, character=nova, path="d.md", text="x", vor=4).ok


def test_block_ersetzen_keeps_the_heading(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    result = block_ersetzen(
        user=user,
        character=nova,
        path="kennlinie.md",
        block="Beleg",
        text="Neue Messung:\n\n- 85 %",
    )
    assert result.ok
    text = (folder / "kennlinie.md").read_text()
    assert section(text, "### Beleg") == "### Beleg\n\n[i1>] Neue Messung:\n\n- 85 % [<i1]\n"
    assert DEFINITION in text


def test_block_anfuegen_appends_a_new_section(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    result = block_anfuegen(
        user=user,
        character=nova,
        path="tee.md",
        text="Sencha wird bitter über 80 Grad.",
        ueberschrift="Sorten",
    )
    assert result.ok
    assert (
        (folder / "tee.md")
        .read_text()
        .endswith("drei Minuten.\n\n## Sorten\n\n[i1>] Sencha wird bitter über 80 Grad. [<i1]\n")
    )


def test_a_heading_in_the_text_gets_marks_on_their_own_lines(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    result = block_anfuegen(user=user, character=nova, path="tee.md", text="#### Sencha\n\nBitter.")
    assert result.ok
    assert (folder / "tee.md").read_text().endswith("[i1>]\n#### Sencha\n\nBitter. [<i1]\n")
    assert [
        b["heading"] for b in struktur_analysieren(user=user, character=nova, path="tee.md").blocks
    ][-1] == "Sencha"


# --- metadata, header, content rules -----------------------------------------------------------


def test_metadaten_aktualisieren_touches_only_the_header(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    old = (folder / "tee.md").read_text()
    result = metadaten_aktualisieren(
        user=user,
        character=nova,
        path="tee.md",
        felder={"Zusammenfassung": "Wie grüner Tee gelingt."},
    )
    assert result.ok and result.version == "1.1"
    new = (folder / "tee.md").read_text()
    assert new.startswith(
        "# Grüner Tee\n\nVersion: 1.1\nZusammenfassung: Wie grüner Tee gelingt.\n"
    )
    assert new.split("## AKTUELL")[1] == old.split("## AKTUELL")[1]
    assert KnowledgeEntry.objects.get(path="tee.md").summary == "Wie grüner Tee gelingt."
    bad = metadaten_aktualisieren(
        user=user, character=nova, path="tee.md", felder={"Version": "9.9"}
    )
    assert bad.step == Step.UNBEKANNTES_FELD


def test_the_header_is_changed_only_through_metadata(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    before = (folder / "tee.md").read_bytes()
    result = str_replace_in_block(
        user=user,
        character=nova,
        path="tee.md",
        block="Grüner Tee",
        alt="Version: 1.0",
        neu="Version: 7.0",
    )
    assert result.step == Step.KOPFBEREICH
    assert (folder / "tee.md").read_bytes() == before


@pytest.mark.parametrize("text", ["Schon [i7>] markiert", "Ende [<i2]", "", "   ", "x" * 9000])
def test_content_cannot_bring_marks_or_be_empty(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character, text: str
) -> None:
    before = (folder / "tee.md").read_bytes()
    result = block_anfuegen(user=user, character=nova, path="tee.md", text=text)
    assert result.status == Status.FEHLER
    assert result.step in (Step.MARKENFORM, Step.LEERER_TEXT, Step.TEXT_ZU_LANG)
    assert (folder / "tee.md").read_bytes() == before


def test_a_file_without_version_line_is_not_edited(
    folder: Path, user: Any, nova: Character
) -> None:
    (folder / "hand.md").write_text("# Von Hand\n\n## Teil\n\nText.\n")
    result = block_anfuegen(user=user, character=nova, path="hand.md", text="Mehr.")
    assert result.step == Step.KEINE_VERSION
    assert (folder / "hand.md").read_text() == "# Von Hand\n\n## Teil\n\nText.\n"


def test_no_tool_writes_into_a_released_root(folder: Path, user: Any, nova: Character) -> None:
    (folder / "frei").mkdir()
    (folder / "frei" / "a.md").write_text("# A\n\nVersion: 1.0\n\n## AKTUELL\n\nText.\n")
    FileRoot.objects.create(user=user, character=nova, path=str(folder / "frei"), eigentum="nutzer")
    before = (folder / "frei" / "a.md").read_bytes()
    for result in (
        datei_schreiben(user=user, character=nova, path="frei/b.md", thema="B", inhalt="x"),
        block_anfuegen(user=user, character=nova, path="frei/a.md", text="x"),
        datei_schreiben(
            user=user, character=nova, path="frei/a.md", thema="A", inhalt="x", ueberschreiben=True
        ),
    ):
        assert (result.status, result.step) == (Status.ABGELEHNT, "in_freigabe")
    assert (folder / "frei" / "a.md").read_bytes() == before
    assert not (folder / "frei" / "b.md").exists()


@pytest.mark.parametrize(
    ("old", "new", "region", "skip", "expected"),
    [
        (["a", "b", "c"], ["a", "X", "c"], (1, 2, 2), set(), True),
        (["a", "b", "c"], ["a", "X", "Y", "c"], (1, 2, 3), set(), True),
        (["a", "b", "c"], ["Z", "X", "c"], (1, 2, 2), set(), False),
        (["a", "b", "c"], ["a", "X", "Z"], (1, 2, 2), set(), False),
        (["v1", "b", "c"], ["v2", "X", "c"], (1, 2, 2), {0}, True),
        (["a", "b", "c"], ["a", "b", "c", "d"], (3, 3, 3), set(), False),
    ],
    ids=[
        "ersetzt",
        "eingefuegt",
        "davor_geaendert",
        "danach_geaendert",
        "versionszeile",
        "zu_lang",
    ],
)
def test_only_region_changed(
    old: list[str], new: list[str], region: tuple[int, int, int], skip: set[int], expected: bool
) -> None:
    assert only_region_changed(old, new, *region, skip) is expected


def test_an_operation_reaching_into_the_header_is_refused(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    before = (folder / "tee.md").read_bytes()

    def into_header(ctx: Any) -> Change:
        return Change(start=1, end_old=1, new_lines=["eingeschmuggelt"])

    result = run_edit(
        user=user, character=nova, path="tee.md", tool="test", cause=PERSON, operation=into_header
    )
    assert result.step == Step.KOPFBEREICH
    assert (folder / "tee.md").read_bytes() == before


# --- locks and intents ---------------------------------------------------------------------------


def test_a_second_writer_waits_then_gives_up_with_a_name(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character, settings: Any
) -> None:
    settings.KNOWLEDGE_LOCK_TIMEOUT_S = 0.3
    before = (folder / "tee.md").read_bytes()
    fd = os.open(folder / ".tee.md.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = block_anfuegen(user=user, character=nova, path="tee.md", text="Noch etwas.")
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert (result.status, result.step) == (Status.FEHLER, Step.GESPERRT)
    assert (folder / "tee.md").read_bytes() == before
    assert block_anfuegen(user=user, character=nova, path="tee.md", text="Noch etwas.").ok


def test_open_intents_are_settled_by_the_file_hash(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    path = folder / "tee.md"
    landed_text = path.read_text().replace("drei Minuten", "[i1>]zwei Minuten[<i1]")
    base = {
        "user": user,
        "character": nova,
        "path": "tee.md",
        "tool": "str_replace_in_block",
        "diff": "",
    }
    lost = KnowledgeEdit.objects.create(**base, hash_after="0" * 64, outcome="vorbereitet")
    # A writer died after its rename: the bytes are there, the row still says "vorbereitet".
    path.write_text(landed_text)
    (folder / ".tee.md.123.abcd.tmp").write_text("halb")
    landed = KnowledgeEdit.objects.create(
        **base, mark="i1", hash_after=sha(path), outcome="vorbereitet"
    )
    result = block_anfuegen(user=user, character=nova, path="tee.md", text="Danach.")
    assert result.ok and result.mark == "i2"  # the settled intent's mark is not reused
    lost.refresh_from_db()
    landed.refresh_from_db()
    assert (lost.outcome, landed.outcome) == ("verworfen", "geschrieben")
    assert not (folder / ".tee.md.123.abcd.tmp").exists()


# --- undo ---------------------------------------------------------------------------------------


def test_undo_by_mark_restores_the_file_byte_for_byte(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    path = folder / "kennlinie.md"
    before = path.read_bytes()
    done = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Früher bei Hitze.", nach="Definition"
    )
    assert path.read_bytes() != before
    undone = knowledge_mark_undo(
        user=user, character=nova, path=str(folder / "kennlinie.md"), mark="[i1>]"
    )
    assert undone.ok, undone
    assert path.read_bytes() == before
    row = KnowledgeEntry.objects.get(path="kennlinie.md")
    assert (row.version, row.inhalt_hash) == ("1.0", hashlib.sha256(before).hexdigest())
    original = KnowledgeEdit.objects.get(pk=done.edit_pk)
    assert original.outcome == "zurueckgenommen"
    assert KnowledgeEdit.objects.get(pk=undone.edit_pk).undoes_id == original.pk
    again = knowledge_edit_undo(user=user, edit_id=original.pk)
    assert again.step == Step.SCHON_ZURUECKGENOMMEN
    # Marks are never reused, also after an undo.
    assert block_anfuegen(user=user, character=nova, path="kennlinie.md", text="Neu.").mark == "i2"


def test_undo_after_other_edits_restores_its_block(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    path = folder / "kennlinie.md"
    original_definition = section(path.read_text(), "### Definition")
    first = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Früher bei Hitze.", nach="Definition"
    )
    str_replace_in_block(
        user=user,
        character=nova,
        path="kennlinie.md",
        block="Beleg",
        alt="12. März",
        neu="13. März",
    )
    undone = knowledge_edit_undo(user=user, edit_id=first.edit_pk)
    assert undone.ok and undone.version == "1.3"
    text = path.read_text()
    assert section(text, "### Definition") == original_definition
    assert "[i2>]13. März[<i2]" in text and "[i1>]" not in text


def test_undo_refuses_when_the_marked_block_was_touched(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    path = folder / "kennlinie.md"
    first = block_einfuegen(
        user=user, character=nova, path="kennlinie.md", text="Früher bei Hitze.", nach="Definition"
    )
    path.write_text(path.read_text().replace("Früher bei Hitze.", "Früher bei großer Hitze."))
    touched = path.read_bytes()
    result = knowledge_edit_undo(user=user, edit_id=first.edit_pk)
    assert (result.status, result.step) == (Status.FEHLER, Step.BLOCK_VERAENDERT)
    assert "[i1>]" in result.message
    assert path.read_bytes() == touched


def test_undo_of_a_new_file_removes_it(folder: Path, user: Any, nova: Character) -> None:
    done = datei_schreiben(user=user, character=nova, path="neu.md", thema="Neu", inhalt="Text.")
    assert knowledge_edit_undo(user=user, edit_id=done.edit_pk).ok
    assert not (folder / "neu.md").exists()
    assert not KnowledgeEntry.objects.filter(path="neu.md").exists()


def test_undo_of_another_persons_edit_reads_as_missing(
    corpus: dict[str, Any], user: Any, other_user: Any, nova: Character
) -> None:
    done = block_anfuegen(user=user, character=nova, path="tee.md", text="Mehr.")
    assert knowledge_edit_undo(user=other_user, edit_id=done.edit_pk).step == Step.KEINE_BEARBEITUNG


# --- the row follows the file ------------------------------------------------------------------


def test_the_library_row_follows_every_write(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    row = KnowledgeEntry.objects.get(path="harz.md")
    assert row.topic_embedding is not None
    vector_before = list(row.topic_embedding)
    result = block_anfuegen(
        user=user, character=nova, path="harz.md", ueberschrift="Brockenbahn",
        text="Die Brockenbahn fährt mit Dampf von Wernigerode auf den Brocken.",
    )  # fmt: skip
    assert result.ok
    row.refresh_from_db()
    assert row.version == "1.1" and row.inhalt_hash == sha(folder / "harz.md")
    assert "Brockenbahn" in [b["heading"] for b in row.block_map]
    assert list(row.topic_embedding) != vector_before
    assert KnowledgeEdit.objects.get(pk=result.edit_pk).entry_id == row.pk


# --- reading -------------------------------------------------------------------------------------


def test_reading_tools(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character, settings: Any
) -> None:
    blocks = struktur_analysieren(user=user, character=nova, path="kennlinie.md").blocks
    assert [(b["heading"], b["ordinal"]) for b in blocks] == [
        ("Sättigung der Kennlinie", 1), ("AKTUELL", 2), ("Definition", 3), ("Beleg", 4),
    ]  # fmt: skip
    by_name = block_lesen(user=user, character=nova, path="kennlinie.md", block="definition")
    by_number = block_lesen(user=user, character=nova, path="kennlinie.md", block=3)
    assert by_name.text == by_number.text == f"### Definition\n\n{DEFINITION}"
    full = datei_lesen(user=user, character=nova, path="kennlinie.md")
    assert full.version == "1.0" and full.text == (folder / "kennlinie.md").read_text()
    lines = zeilen_lesen(user=user, character=nova, path="kennlinie.md", start=1, end=3)
    assert lines.text == "# Sättigung der Kennlinie\n\nVersion: 1.0"
    for start, end in ((0, 2), (5, 4), (999, 1000), ("1", 2), (True, 2)):
        bad = zeilen_lesen(user=user, character=nova, path="kennlinie.md", start=start, end=end)
        assert bad.step == Step.ZEILEN_UNGUELTIG
    settings.KNOWLEDGE_READ_MAX_LINES = 2
    cut = zeilen_lesen(user=user, character=nova, path="kennlinie.md", start=1, end=9)
    assert cut.cut and (cut.line_start, cut.line_end) == (1, 2) and "höchstens 2" in cut.message
    hits = datei_grep(user=user, character=nova, muster="80")
    assert {(m["path"], m["line"]) for m in hits.matches} == {("kennlinie.md", 13), ("tee.md", 9)}
    one = datei_grep(user=user, character=nova, muster="GRAD", path="sauerteig.md")
    assert [m["text"] for m in one.matches] == [
        "Das Brot backt 50 Minuten bei 230 Grad im vorgeheizten Ofen."
    ]
    assert datei_lesen(user=user, character=nova, path="fehlt.md").step == Step.DATEI_FEHLT
    assert datei_lesen(user=user, character=nova, path="../x.md").status == Status.ABGELEHNT
    assert document.version_of(full.text) == "1.0"
