"""The knowledge chat agent: routing, reading her library, deleting a paragraph through the
gate (undoable by its mark), learning from a released file with provenance, and the re-opener."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conversation import context
from conversation.agents import all_agents
from conversation.models import Character, PendingQuestion, Session
from conversation.pipeline import run_turn
from files.models import FileRoot, IndexEntry
from files.watcher import index_root_run
from knowledge import context as knowledge_context
from knowledge.learn import learn_from_file
from knowledge.models import KnowledgeEdit, KnowledgeEntry
from knowledge.selectors import SOURCE_CHANGED, source_states
from knowledge.tools import knowledge_edit_undo
from novaberg import embeddings
from tests.fakes.openai_server import FakeOpenAI

BRENNEN = """# Brennen von Keramik

Keramik wird zweimal gebrannt: erst der Schrühbrand, dann der Glasurbrand.

## Schrühbrand

Der Schrühbrand läuft bei 900 Grad und macht den Ton fest, aber noch porös.
Danach nimmt der Scherben die Glasur gut an.

## Glasurbrand

Der Glasurbrand erreicht 1240 Grad; die Glasur schmilzt und wird glasig.
Der Ofen darf erst unter 100 Grad geöffnet werden.
"""


def route(text: str) -> str:
    return next((a.name for a in all_agents() if a.detect(text)), "gespraech")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Was weißt du über die Kennlinie in deinem Wissen?", "wissen", id="wissen"),
        pytest.param("Was hast du dir über Sauerteig gemerkt?", "wissen", id="gemerkt"),
        pytest.param("Was steht in deinen Wissensdateien über Tee?", "wissen", id="dateien"),
        pytest.param("Lösch den Absatz über Tee aus deinem Wissen", "wissen", id="loeschen"),
        pytest.param("Lies dir brennen.md durch und merk dir das Wichtigste", "wissen", id="lies"),
        pytest.param("Merk dir das Wichtigste aus brennen.md", "wissen", id="merk-aus"),
        # Her records and plain talk stay where they were.
        pytest.param("Was steht in meinen Notizen über Tee?", "dateien_lesen", id="meine"),
        pytest.param("Lies mir Abschnitt 2 aus brennen.md vor", "dateien_lesen", id="vorlesen"),
        pytest.param("Was weißt du über Tee?", "gespraech", id="plain"),
    ],
)
def test_routing_names_her_own_knowledge(text: str, expected: str) -> None:
    assert route(text) == expected


@pytest.mark.django_db
def test_asking_reads_her_library_with_file_and_version(
    corpus: dict[str, Any], session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(
        user=user,
        character=nova,
        session=session,
        text="Was weißt du über das Backen von Sauerteigbrot in deinem Wissen?",
    )
    assert result.status == "abgeschlossen"
    assert "sauerteig.md, Version 1.0" in result.reply
    assert "50 Minuten bei 230 Grad" in result.reply


@pytest.mark.django_db
def test_asking_about_something_she_does_not_know_says_so(
    corpus: dict[str, Any], session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(
        user=user, character=nova, session=session,
        text="Was hast du dir über Steuererklärungen gemerkt?",
    )  # fmt: skip
    assert "steht nichts in meinen Wissensdateien" in result.reply


@pytest.mark.django_db
def test_deleting_a_paragraph_asks_first_writes_with_a_mark_and_is_undoable(
    corpus: dict[str, Any], folder: Path, session: Session, user: Any, nova: Character
) -> None:
    before = (folder / "sauerteig.md").read_bytes()
    order = "Lösch den Absatz über das Anstellgut und das Roggenmehl aus deinem Wissen"
    asked = run_turn(user=user, character=nova, session=session, text=order)
    assert asked.status == "rueckfrage" and asked.question
    assert "sauerteig.md" in asked.question and "Anstellgut wird täglich" in asked.question
    assert (folder / "sauerteig.md").read_bytes() == before  # nothing before consent

    refused = run_turn(user=user, character=nova, session=session, text="nein")
    assert refused.status == "dismissed"
    assert (folder / "sauerteig.md").read_bytes() == before

    run_turn(user=user, character=nova, session=session, text=order)
    done = run_turn(user=user, character=nova, session=session, text="ja")
    assert done.status == "abgeschlossen", done.reply
    text = (folder / "sauerteig.md").read_text()
    assert "Anstellgut" not in text and "[i1>][<i1]" in text and "Version: 1.1" in text
    assert "50 Minuten bei 230 Grad" in text  # the other paragraph stays
    edit = KnowledgeEdit.objects.get(user=user, path="sauerteig.md", mark="i1")
    assert edit.cause == "person" and edit.tool == "str_replace_in_block"
    assert PendingQuestion.objects.filter(user=user, status="ausgefuehrt").count() == 1

    undone = knowledge_edit_undo(user=user, edit_id=edit.pk)
    assert undone.ok and (folder / "sauerteig.md").read_bytes() == before


@pytest.fixture
def released(tmp_path: Path, user: Any, nova: Character) -> FileRoot:
    base = tmp_path / "ablage"
    base.mkdir()
    (base / "brennen.md").write_text(BRENNEN, encoding="utf-8")
    root = FileRoot.objects.create(
        user=user, character=nova, path=str(base.resolve()), state=FileRoot.State.ACTIVE
    )
    report = index_root_run(root_id=root.pk, full_hash=True)
    assert report.outcome == "fertig", report
    return root


@pytest.mark.django_db
def test_learning_stores_a_distillate_with_provenance_and_sets_the_learned_hash(
    zone: Path, released: FileRoot, session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(
        user=user, character=nova, session=session,
        text="Lies dir brennen.md durch und merk dir das Wichtigste",
    )  # fmt: skip
    assert result.status == "abgeschlossen", result.reply
    index = IndexEntry.objects.get(root=released, rel_path="brennen.md")
    assert index.zuletzt_gelernt_hash == index.inhalt_hash != ""
    entry = KnowledgeEntry.objects.get(user=user, character=nova)
    assert (entry.path, entry.typ, entry.version) == ("erarbeitet/brennen.md", "erarbeitet", "1.0")
    assert entry.sources == [
        {"path": "brennen.md", "lines": "1-13", "hash": index.inhalt_hash, "root_id": released.pk}
    ]
    text = (zone / f"{user.pk}-{nova.pk}" / "erarbeitet" / "brennen.md").read_text()
    assert "Der Schrühbrand läuft bei 900 Grad" in text and "(Zeilen 7-7)" in text
    assert "Gelernt aus brennen.md, Zeilen 1-13" in text
    # The released file itself is untouched.
    assert (Path(released.path) / "brennen.md").read_text() == BRENNEN

    again = learn_from_file(user=user, character=nova, name="brennen.md")
    assert (again.status, again.step) == ("schon_bekannt", "schon_gelernt")
    assert KnowledgeEdit.objects.filter(user=user).count() == 1


@pytest.mark.django_db
def test_a_changed_source_reopens_the_gap_until_relearned(
    zone: Path, released: FileRoot, user: Any, nova: Character, api: Any
) -> None:
    assert learn_from_file(user=user, character=nova, name="brennen.md").status == "ok"
    entry = KnowledgeEntry.objects.get(user=user, character=nova)
    assert [s.label for s in source_states(user=user, entries=[entry])[entry.pk]] == [""]

    (Path(released.path) / "brennen.md").write_text(
        BRENNEN.replace("900 Grad", "950 Grad"), encoding="utf-8"
    )
    assert index_root_run(root_id=released.pk, full_hash=True).outcome == "fertig"
    index = IndexEntry.objects.get(root=released, rel_path="brennen.md")
    assert index.inhalt_hash != index.zuletzt_gelernt_hash
    assert [s.label for s in source_states(user=user, entries=[entry])[entry.pk]] == [
        SOURCE_CHANGED
    ]
    # Shown wherever the library is shown: the composer's block, the API.
    question = "Bei wie viel Grad läuft der Schrühbrand?"
    found = knowledge_context.search(
        context.SourceQuery(
            user=user, character=nova, text=question, query_vector=embeddings.embed_one(question)
        )
    )
    assert "Gelernt aus: brennen.md:1-13 (Quelle geändert seit dem Lernen)" in (
        knowledge_context.render(found.items)
    )
    listed = api.get("/api/knowledge/").json()
    assert listed[0]["sources"][0]["mark"] == SOURCE_CHANGED
    assert api.get(f"/api/knowledge/{entry.pk}/").json()["quelle_geaendert"] is True

    relearned = learn_from_file(user=user, character=nova, name="brennen.md")
    assert relearned.status == "ok" and relearned.version == "1.1"
    entry.refresh_from_db()
    assert [s.label for s in source_states(user=user, entries=[entry])[entry.pk]] == [""]
    assert "950 Grad" in (zone / f"{user.pk}-{nova.pk}" / entry.path).read_text()


@pytest.mark.django_db
def test_learning_with_a_model_that_answers_broken_json_falls_back_by_name(
    fake_llm: FakeOpenAI, zone: Path, released: FileRoot, user: Any, nova: Character
) -> None:
    fake_llm.set_default('{"thema": "Brennen", "punkte": "alles"}')
    result = learn_from_file(user=user, character=nova, name="brennen.md")
    assert result.status == "ok"
    assert (result.distiller, result.distiller_step) == ("ersatz_offline", "keine_punkte")
    # The model was asked (and its answer read and refused by name), not skipped.
    assert any(
        r["messages"][0]["content"].startswith("Du liest für Nova eine Datei")
        for r in fake_llm.chat_requests()
    )


@pytest.mark.django_db
def test_learning_with_a_model_keeps_its_checked_points(
    fake_llm: FakeOpenAI, zone: Path, released: FileRoot, user: Any, nova: Character
) -> None:
    answer = {"thema": "Zwei Brände", "punkte": [{"text": "Erst schrühen, dann glasieren.",
                                                   "zeilen": "3-3"}]}  # fmt: skip
    fake_llm.set_default(json.dumps(answer, ensure_ascii=False))
    result = learn_from_file(user=user, character=nova, name="brennen.md")
    assert (result.status, result.distiller, result.points) == ("ok", "modell", 1)
    text = (zone / f"{user.pk}-{nova.pk}" / result.path).read_text()
    assert "# Aus brennen.md: Zwei Brände" in text
    assert "- Erst schrühen, dann glasieren. (Zeilen 3-3)" in text


@pytest.mark.django_db
def test_learning_an_unknown_file_is_a_named_failure(
    zone: Path, released: FileRoot, user: Any, nova: Character
) -> None:
    result = learn_from_file(user=user, character=nova, name="gibtsnicht.md")
    assert (result.status, result.step) == ("fehler", "datei_unbekannt")
    assert not KnowledgeEntry.objects.exists()
