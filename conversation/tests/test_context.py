"""The context-provider registry: which block stands in which prompt, and where.

The placement rules live in ``conversation.context`` alone; these tests hold them for what the
plug-in apps register today (files: [AUFZEICHNUNGEN]; directives: [DIREKTIVEN] and the tribunal
check) and for a source of Nova's own knowledge registered the way a later app would."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conversation import context
from conversation.models import MemoryEntry, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from conversation.vocabulary import Status
from novaberg import embeddings
from tests.fakes.openai_server import FakeOpenAI
from tests.records import RECORD

KNOWLEDGE = "Brenner plant Häuser aus Lärchenholz; Fundament im März."


def knowledge_block(items: list[dict[str, Any]]) -> str:
    lines = [f"- {item['path']} (Version {item['version']}): {item['text']}" for item in items]
    return "[EIGENES WISSEN]\nDas hast du dir selbst erarbeitet.\n" + "\n".join(lines)


def knowledge_source(
    search: Callable[[context.SourceQuery], context.SourceFound], order: int = 1
) -> context.ComposerSource:
    return context.ComposerSource(
        name="wissen_test",
        block="EIGENES WISSEN",
        slot=context.Slot.OWN_KNOWLEDGE,
        search=search,
        render=knowledge_block,
        dedupe_key="path",
        # Lower than the records source's order: the slot, not the number, decides the place.
        order=order,
    )


@pytest.fixture
def restore_registry() -> Iterator[None]:
    """Whatever a test registers or replaces is put back as the apps registered it."""
    sources = {s.name: s for s in context.composer_sources()}
    contracts = {c.name: c for c in context.contract_blocks()}
    checks = {c.name: c for c in context.reply_checks()}
    # The knowledge app's real [EIGENES WISSEN] source makes room for the stand-in.
    context.unregister("knowledge")
    yield
    for name in {s.name for s in context.composer_sources()} - set(sources):
        context.unregister(name)
    for name in {c.name for c in context.contract_blocks()} - set(contracts):
        context.unregister(name)
    for name in {c.name for c in context.reply_checks()} - set(checks):
        context.unregister(name)
    for source in sources.values():
        context.register_composer_source(source)
    for contract in contracts.values():
        context.register_contract_block(contract)
    for check in checks.values():
        context.register_reply_check(check)


# --- the layout as the apps register it ---------------------------------------------------------


def test_plug_ins_fill_their_slots_in_both_prompts() -> None:
    assert context.composer_order() == [
        "AUFGABE",
        "GEDAECHTNIS",
        "EIGENES WISSEN",
        "AUFZEICHNUNGEN",
        "SACHLAGE",
        "GESPRAECHSVEKTOR",
        "GESPRAECHSVERLAUF",
    ]
    assert context.responder_order() == [
        "IDENTITAET",
        "EIGENE_EMOTION",
        "KOMMUNIKATION",
        "GESPRAECHSVERLAUF",
        "INHALT",
        "REGELN",
        "KORREKTUR",
        "DIREKTIVEN",
    ]
    assert [c.name for c in context.reply_checks()] == ["direktiven"]


def test_an_own_knowledge_source_stands_between_memory_and_records(
    restore_registry: None,
) -> None:
    context.register_composer_source(knowledge_source(lambda q: context.SourceFound()))
    order = context.composer_order()
    assert (
        order.index("GEDAECHTNIS") < order.index("EIGENES WISSEN") < order.index("AUFZEICHNUNGEN")
    )
    assert "EIGENES WISSEN" not in context.responder_order()
    assert "EIGENES WISSEN" in context.injected_blocks()


def test_a_later_contract_block_is_still_after_the_rules(restore_registry: None) -> None:
    context.register_contract_block(
        context.ContractBlock(name="test_vertrag", block="TESTVERTRAG", render=lambda user: "")
    )
    order = context.responder_order()
    assert order[-2:] == ["DIREKTIVEN", "TESTVERTRAG"]
    assert order.index("REGELN") < order.index("DIREKTIVEN")
    assert "TESTVERTRAG" not in context.composer_order()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"slot": context.Slot.CONTRACT}, "cannot stand in slot", id="contract-slot"),
        pytest.param({"block": "GEDAECHTNIS"}, "conversation's own block", id="own-composer"),
        pytest.param({"block": "IDENTITAET"}, "conversation's own block", id="own-responder"),
        pytest.param({"block": "AUFZEICHNUNGEN"}, "already contributed by files", id="taken"),
        pytest.param({"block": "DIREKTIVEN"}, "already contributed by directives", id="taken-2"),
    ],
)
def test_a_source_cannot_take_another_place(
    restore_registry: None, change: dict[str, Any], message: str
) -> None:
    source = dataclasses.replace(knowledge_source(lambda q: context.SourceFound()), **change)
    with pytest.raises(ValueError, match=message):
        context.register_composer_source(source)
    assert "wissen_test" not in {s.name for s in context.composer_sources()}


def test_a_contract_cannot_take_a_composer_block(restore_registry: None) -> None:
    with pytest.raises(ValueError, match="already contributed by files"):
        context.register_contract_block(
            context.ContractBlock(name="x", block="AUFZEICHNUNGEN", render=lambda user: "")
        )


def test_a_block_without_its_header_gets_it() -> None:
    source = dataclasses.replace(
        knowledge_source(lambda q: context.SourceFound()), render=lambda items: "nackt"
    )
    assert context.render_source(source, [{}]) == "[EIGENES WISSEN]\nnackt"


# --- through the turn ---------------------------------------------------------------------------


def positions(text: str, markers: list[str]) -> list[int]:
    found = [(f"\n{text}").find(f"\n[{m}]\n") for m in markers]
    assert all(p >= 0 for p in found), dict(zip(markers, found, strict=True))
    return found


@pytest.fixture
def plugged(restore_registry: None) -> list[context.SourceQuery]:
    """A knowledge source and fixed records (through the real files source's block), with the
    directives' contract rendering one rule."""
    queries: list[context.SourceQuery] = []

    def search_knowledge(query: context.SourceQuery) -> context.SourceFound:
        queries.append(query)
        item = {"path": "wissen/brenner.md", "version": 3, "text": KNOWLEDGE}
        return context.SourceFound(items=[item, dict(item)], log={"hits": 2})

    def search_records(query: context.SourceQuery) -> context.SourceFound:
        queries.append(query)
        return context.SourceFound(items=[dict(RECORD)], log={"hits": 1})

    files = context.composer_source("files")
    assert files is not None
    context.register_composer_source(dataclasses.replace(files, search=search_records))
    context.register_composer_source(knowledge_source(search_knowledge))
    directives = {c.name: c for c in context.contract_blocks()}["directives"]
    context.register_contract_block(
        dataclasses.replace(
            directives, render=lambda *, user: "[DIREKTIVEN]\n- Sprich mich immer mit Sie an."
        )
    )
    return queries


def test_every_source_takes_the_one_turn_vector_and_its_place(
    fake_llm: FakeOpenAI,
    session: Session,
    user: Any,
    plugged: list[context.SourceQuery],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    MemoryEntry.objects.create(
        user=user,
        character=session.character,
        kind=MemoryEntry.Kind.LONG,
        text="Der Architekt heißt Brenner.",
        embedding=embeddings.embed_one("Der Architekt heißt Brenner."),
        salience=0.6,
    )
    embedded: list[list[str]] = []
    real = embeddings.embed

    def counting(texts: list[str]) -> list[list[float]]:
        embedded.append(list(texts))
        return real(texts)

    monkeypatch.setattr(embeddings, "embed", counting)
    fake_llm.set_default("Am Donnerstag um 14 Uhr.")
    text = "Wann kommt der Architekt Brenner?"

    result = run_turn(user=user, character=session.character, session=session, text=text)

    assert result.status == Status.DONE
    # One embedding of the text, handed to every source.
    assert embedded == [[text]]
    assert len(plugged) == 2 and plugged[0].query_vector is plugged[1].query_vector
    assert plugged[0].user == user and plugged[0].text == text

    composer, responder = (
        next(r for r in fake_llm.chat_requests() if r["messages"][0]["content"].startswith(head))
        for head in ("[VERFASSER]", "[IDENTITAET]")
    )
    system = composer["messages"][0]["content"]
    order = ["GEDAECHTNIS", "EIGENES WISSEN", "AUFZEICHNUNGEN", "SACHLAGE", "GESPRAECHSVERLAUF"]
    assert positions(system, order) == sorted(positions(system, order))
    # The reducer keeps one of the two equal knowledge items (deduplicated within the source).
    assert system.count(KNOWLEDGE) == 1

    rsystem = responder["messages"][0]["content"]
    assert rsystem.endswith("[DIREKTIVEN]\n- Sprich mich immer mit Sie an.")
    everything = json.dumps(responder["messages"], ensure_ascii=False)
    for leaked in ("[EIGENES WISSEN]", "Lärchenholz", "[AUFZEICHNUNGEN]", "Lindenweg"):
        assert leaked not in everything, leaked

    turn = Turn.objects.get(pk=result.turn_id)
    assert [r["citation"] for r in turn.records] == ["notizen/hausbau.md:3-7"]
    enricher = PipelineLog.objects.get(turn=turn, node="enricher")
    assert enricher.outcome == "angereichert"
    assert enricher.details["wissen_test"] == {"hits": 2}
    reducer = PipelineLog.objects.get(turn=turn, node="reducer")
    assert reducer.details["wissen_test_dupes"] == 1


def test_a_failing_source_is_named_and_the_others_still_deliver(
    session: Session, user: Any, plugged: list[context.SourceQuery]
) -> None:
    def broken(query: context.SourceQuery) -> context.SourceFound:
        raise RuntimeError("Bibliothek nicht lesbar")

    context.register_composer_source(knowledge_source(broken))
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    assert result.status == Status.DONE
    assert [r["citation"] for r in result.records] == ["notizen/hausbau.md:3-7"]
    enricher = PipelineLog.objects.get(turn_id=result.turn_id, node="enricher")
    assert enricher.outcome == "eigenes_wissen_fehler"
    assert "Bibliothek nicht lesbar" in enricher.details["wissen_test"]["error"]
    prompt = Turn.objects.get(pk=result.turn_id).prompts["composer"][0]["content"]
    assert "[EIGENES WISSEN]" not in prompt and "[AUFZEICHNUNGEN]" in prompt


def test_the_offline_composer_says_what_a_source_gives_it_to_say(
    session: Session, user: Any, plugged: list[context.SourceQuery]
) -> None:
    source = context.composer_source("wissen_test")
    assert source is not None
    context.register_composer_source(
        dataclasses.replace(
            source,
            offline_text=lambda items: (
                "Aus meinem eigenen Wissen: " + " ".join(str(item["text"]) for item in items)
            ),
        )
    )
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    # Offline-Modus: records first (quoted at their citation), then her own knowledge.
    assert result.reply.index("notizen/hausbau.md:3-7") < result.reply.index(
        f"Aus meinem eigenen Wissen: {KNOWLEDGE}"
    )
