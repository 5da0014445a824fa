"""[EIGENES WISSEN]: the library as a context source in every turn, on the one turn vector, in
its own block between her memory and the records — and never in the responder's prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conversation import context
from conversation.models import Character, MemoryEntry, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from files.tests.corpus import make_root
from knowledge import context as knowledge_context
from knowledge.rueckweg import rueckweg_for_memory
from knowledge.tests.factories import promoted
from knowledge.tests.test_rueckweg import KENNLINIE
from knowledge.tools import datei_schreiben
from novaberg import embeddings
from tests.chat_requests import is_composer, is_responder
from tests.fakes.openai_server import FakeOpenAI

MESSUNG = {
    "messung/lastversuch.md": (
        "# Lastversuch an der Pumpe\n\nAm 3. Mai lief die Pumpe bei steigender Last; die "
        "Kennlinie knickte bei 75 Prozent ab.\n",
        ["Lastversuch", "Kennlinie", "Pumpe"],
    )
}
QUESTION = "Wann setzt die Sättigung der Kennlinie bei hoher Last ein?"


def positions(text: str, markers: list[str]) -> list[int]:
    found = [(f"\n{text}").find(f"\n[{m}]\n") for m in markers]
    assert all(p >= 0 for p in found), dict(zip(markers, found, strict=True))
    return found


def test_the_source_is_registered_in_its_own_slot() -> None:
    source = context.composer_source("knowledge")
    assert source is not None and source.slot == context.Slot.OWN_KNOWLEDGE
    order = context.composer_order()
    assert order.index("GEDAECHTNIS") < order.index("EIGENES WISSEN")
    assert order.index("EIGENES WISSEN") < order.index("AUFZEICHNUNGEN")
    assert "EIGENES WISSEN" not in context.responder_order()


@pytest.mark.django_db
def test_an_incorporated_memory_comes_back_in_a_later_turn_for_the_composer_only(
    fake_llm: FakeOpenAI,
    corpus: dict[str, Any],
    folder: Path,
    session: Session,
    user: Any,
    nova: Character,
    tmp_path: Path,
) -> None:
    # The return path carried a memory into kennlinie.md (version 1.1, mark [i1>]).
    incorporated = rueckweg_for_memory(memory_entry_id=promoted(session, KENNLINIE).pk)
    assert (incorporated.outcome, incorporated.version) == ("eingearbeitet", "1.1")
    # Her memory and a released record on the same subject, so all three blocks stand.
    MemoryEntry.objects.create(
        user=user,
        character=nova,
        kind="lzg",
        text="Die Pumpe im Keller ist mein Versuchsaufbau.",
        embedding=embeddings.embed_one(QUESTION),
        salience=0.6,
    )
    make_root(user=user, character=nova, directory=tmp_path / "ablage", corpus=MESSUNG)
    fake_llm.reset()
    content = (
        "Laut meinem Wissen (kennlinie.md, Version 1.1) sättigt sie früher, wenn der Speicher "
        "voll ist."
    )
    fake_llm.add(content, match=is_composer)
    fake_llm.add("Bei hoher Last, wenn der Speicher schon voll ist.", match=is_responder)
    fake_llm.set_default("{}")

    result = run_turn(user=user, character=nova, session=session, text=QUESTION)
    assert result.status == "abgeschlossen"

    composers = [r for r in fake_llm.chat_requests() if is_composer(r)]
    assert len(composers) == 1
    system = composers[0]["messages"][0]["content"]
    order = [
        "GEDAECHTNIS",
        "EIGENES WISSEN",
        "AUFZEICHNUNGEN",
        "SACHLAGE",
        "GESPRAECHSVEKTOR",
        "GESPRAECHSVERLAUF",
    ]
    assert positions(system, order) == sorted(positions(system, order))
    block = system[system.index("[EIGENES WISSEN]\n") : system.index("[AUFZEICHNUNGEN]\n")]
    assert "1. Datei: kennlinie.md · Version 1.1 · Thema: Sättigung der Kennlinie" in block
    assert KENNLINIE in block  # the incorporated paragraph, marks stripped
    assert "[i1>]" not in block
    # Her knowledge is not memory and not a record: neither block carries it.
    memory_block = system[system.index("[GEDAECHTNIS]\n") : system.index("[EIGENES WISSEN]\n")]
    records_block = system[system.index("[AUFZEICHNUNGEN]\n") : system.index("[SACHLAGE]\n")]
    assert "kennlinie.md" not in memory_block and "kennlinie.md" not in records_block
    assert "messung/lastversuch.md" in records_block

    responders = [r for r in fake_llm.chat_requests() if is_responder(r)]
    everything = json.dumps(responders, ensure_ascii=False)
    assert content in everything  # the composer's content reaches it, word for word
    for leaked in ("[EIGENES WISSEN]", knowledge_context.FRAMING[:60], "Knick der Kennlinie"):
        assert leaked not in everything, leaked

    # Logged under the source's name; the turn keeps the block it showed.
    enricher = PipelineLog.objects.get(turn_id=result.turn_id, node="enricher")
    assert enricher.details["knowledge"]["paths"][0] == "kennlinie.md"
    turn = Turn.objects.get(pk=result.turn_id)
    assert turn.prompts["composer"] == composers[0]["messages"]


@pytest.mark.django_db
def test_one_turn_vector_no_second_embedding(
    corpus: dict[str, Any], user: Any, nova: Character, monkeypatch: pytest.MonkeyPatch
) -> None:
    vector = embeddings.embed_one(QUESTION)

    def no_embedding(*args: Any, **kw: Any) -> Any:
        raise AssertionError("the library source must not embed again")

    monkeypatch.setattr("novaberg.embeddings.embed_one", no_embedding)
    monkeypatch.setattr("novaberg.embeddings.embed", no_embedding)
    found = knowledge_context.search(
        context.SourceQuery(user=user, character=nova, text=QUESTION, query_vector=vector)
    )
    assert [i["path"] for i in found.items][:1] == ["kennlinie.md"]
    assert found.log["hits"] == len(found.items) <= 3


@pytest.mark.django_db
def test_another_persons_library_never_reaches_the_turn(
    zone: Path, user: Any, other_user: Any, nova: Character
) -> None:
    result = datei_schreiben(
        user=other_user,
        character=nova,
        path="kennlinie.md",
        thema="Sättigung der Kennlinie",
        inhalt="### Definition\n\nDie Kennlinie sättigt am Knick.",
    )
    assert result.ok
    found = knowledge_context.search(
        context.SourceQuery(
            user=user, character=nova, text=QUESTION, query_vector=embeddings.embed_one(QUESTION)
        )
    )
    assert found.items == []
    assert knowledge_context.render(found.items) == ""


@pytest.mark.django_db
def test_offline_the_composer_answers_from_her_own_knowledge_with_file_and_version(
    corpus: dict[str, Any], session: Session, user: Any, nova: Character
) -> None:
    result = run_turn(
        user=user, character=nova, session=session, text="Wie lange backt das Sauerteigbrot?"
    )
    assert "Aus meinem eigenen Wissen (sauerteig.md, Version 1.0)" in result.reply
    assert "50 Minuten bei 230 Grad" in result.reply
