"""The turn pipeline against the fake OpenAI-compatible server: which node saw which block."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from conversation import agents
from conversation.models import MemoryEntry, PendingQuestion, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from directives.tribunal import TribunalResult
from files.retrieval import RetrievalResult
from novaberg import embeddings
from tests.chat_requests import is_composer, is_responder, is_router, is_vector
from tests.factories import SessionFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.note_agent import NoteAgent
from tests.records import RECORD

pytestmark = pytest.mark.django_db

NODES = [
    "pending",
    "router",
    "agent",
    "enricher",
    "reducer",
    "gespraechsvektor",
    "composer",
    "responder",
    "tribunal",
    "gedaechtnis",
]
DIRECTIVES = (
    "[DIREKTIVEN]\nDer Nutzer hat folgende absolute Verhaltensanweisungen erteilt.\n"
    "- Sprich mich immer mit Sie an."
)
VECTOR_REPLY = json.dumps(
    {
        "strategie": "informieren",
        "absicht": "knowledge",
        "vehikel": "aussage",
        "impuls": "Der Nutzer sorgt sich um seinen Termin.",
    }
)


def request_of(fake: FakeOpenAI, which: Callable[[dict], bool]) -> dict:
    found = [r for r in fake.chat_requests() if which(r)]
    assert len(found) == 1, f"expected one request, got {len(found)}"
    return found[0]


def positions(text: str, markers: list[str]) -> list[int]:
    # A block starts on its own line with its header; the instruction may mention block names.
    found = [(f"\n{text}").find(f"\n[{m}]\n") for m in markers]
    assert all(p >= 0 for p in found), dict(zip(markers, found, strict=True))
    return found


@pytest.fixture(autouse=True)
def directives_stub(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The directives block/tribunal as the test wants them (the directives app has its own
    tests; here they must not depend on its tables)."""
    current = {"block": ""}
    monkeypatch.setattr("directives.blocks.directives_block", lambda *, user: current["block"])
    monkeypatch.setattr(
        "directives.tribunal.review", lambda *, user, reply: TribunalResult("keine_direktiven")
    )
    return current


@pytest.fixture
def records(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    delivered = [dict(RECORD)]
    monkeypatch.setattr(
        "files.retrieval.records_for_turn",
        lambda **kw: RetrievalResult(records=[dict(r) for r in delivered], log={"hits": 1}),
    )
    return delivered


def remember(session: Session, user: Any, text: str) -> MemoryEntry:
    return MemoryEntry.objects.create(
        user=user,
        character=session.character,
        kind="lzg",
        text=text,
        embedding=embeddings.embed_one(text),
        salience=0.6,
    )


def test_reply_streams_from_the_llm_and_every_node_logs(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.set_default("Schön, dass du da bist.")
    fake_llm.add('{"ziel": "gespraech", "aktion": ""}', match=is_router)
    tokens: list[str] = []
    result = run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Hallo!",
        on_token=tokens.append,
    )
    assert result.status == "abgeschlossen"
    assert result.reply == "Schön, dass du da bist."
    # The sentence guard sends whole checked sentences (seed 000 §8.3): one here.
    assert tokens and "".join(tokens) == result.reply
    assert result.ttft_ms is not None and result.ttft_ms <= result.total_ms
    rows = list(PipelineLog.objects.filter(turn_id=result.turn_id))
    assert [r.node for r in rows] == NODES
    assert all(r.outcome and r.outcome != "ohne_ergebnis" for r in rows)
    by_node = {r.node: r for r in rows}
    assert by_node["responder"].outcome == "gestreamt"
    assert by_node["composer"].outcome == "verfasst"
    # The fake answered the vector call with prose: unreadable, named, replaced by the rules.
    assert by_node["gespraechsvektor"].outcome == "ersatz_offline"
    assert by_node["gespraechsvektor"].details["modellschritt"] == "kein_json"
    # Four model calls: the router (JSON; with a model every message is put to it, issue 28),
    # the vector (JSON), the composer (whole), the responder (streamed).
    requests = fake_llm.chat_requests()
    assert [bool(r.get("stream")) for r in requests] == [False, False, False, True]
    assert is_router(requests[0]) and by_node["router"].details["by"] == "modell"
    assert requests[0].get("response_format") == {"type": "json_object"}
    assert requests[1].get("response_format") == {"type": "json_object"}
    assert requests[-1]["messages"][-1] == {"role": "user", "content": "Hallo!"}


def test_composer_and_responder_see_their_blocks_in_order_and_directives_last(
    fake_llm: FakeOpenAI,
    session: Session,
    user: Any,
    records: list[dict[str, Any]],
    directives_stub: dict[str, str],
) -> None:
    directives_stub["block"] = DIRECTIVES
    remember(session, user, "Der Architekt heißt Brenner und ist immer zu spät.")
    run_turn(user=user, character=session.character, session=session, text="Ich baue ein Haus.")
    fake_llm.reset()
    fake_llm.add(VECTOR_REPLY, match=is_vector)
    content = "Laut notizen/hausbau.md:3-7 ist der Termin mit Brenner am Donnerstag um 14 Uhr."
    fake_llm.add(content, match=is_composer)
    fake_llm.add("Laut Ihren Notizen ist der Termin am Donnerstag um 14 Uhr.", match=is_responder)

    result = run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Wann ist der Termin mit dem Architekten Brenner?",
    )
    assert result.status == "abgeschlossen"

    composer = request_of(fake_llm, is_composer)
    assert composer.get("stream") is not True
    system = composer["messages"][0]["content"]
    order = ["GEDAECHTNIS", "AUFZEICHNUNGEN", "SACHLAGE", "GESPRAECHSVEKTOR", "GESPRAECHSVERLAUF"]
    assert positions(system, order) == sorted(positions(system, order))
    assert "Brenner und ist immer zu spät" in system  # the memory, labelled as hers
    assert "notizen/hausbau.md:3-7" in system  # the record with its citation
    # seed 003 §2.4: the guiding thought goes to the composer, with its protection after it.
    thought = system.index("Leitgedanke für diese Antwort: Der Nutzer sorgt sich")
    assert system.index("Schreibe ihn niemals ab", thought) > thought
    for block in ("[IDENTITAET]", "[DIREKTIVEN]", "[REGELN]", "[KOMMUNIKATION]"):
        assert block not in system
    assert composer["messages"][-1]["content"].endswith(
        "Wann ist der Termin mit dem Architekten Brenner?"
    )

    responder = request_of(fake_llm, is_responder)
    assert responder["stream"] is True
    rsystem = responder["messages"][0]["content"]
    order = [
        "IDENTITAET",
        "EIGENE_EMOTION",
        "KOMMUNIKATION",
        "GESPRAECHSVERLAUF",
        "INHALT",
        "REGELN",
        "DIREKTIVEN",
    ]
    assert positions(rsystem, order) == sorted(positions(rsystem, order))
    # [DIREKTIVEN] is the last block: nothing follows its text in the system prompt.
    assert rsystem.endswith(DIRECTIVES)
    assert content in rsystem  # the composer's content, word for word
    everything = json.dumps(responder["messages"], ensure_ascii=False)
    for leaked in (
        "[GEDAECHTNIS]",
        "[AUFZEICHNUNGEN]",
        "[SACHLAGE]",
        "[GESPRAECHSVEKTOR]",
        "immer zu spät",  # memory text
        "Baustelle Lindenweg",  # record excerpt
        "Leitgedanke",
    ):
        assert leaked not in everything, leaked
    assert [m["role"] for m in responder["messages"]] == ["system", "user"]

    turn = Turn.objects.get(pk=result.turn_id)
    assert turn.composer_text == content
    assert turn.prompts["composer"] == composer["messages"]
    assert turn.prompts["responder"] == responder["messages"]
    assert [m["text"] for m in turn.memories] == [
        "Der Architekt heißt Brenner und ist immer zu spät."
    ]
    assert turn.records[0]["citation"] == "notizen/hausbau.md:3-7"


def test_history_reaches_both_stages_as_a_block_in_order(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.set_default("Ok.")
    for text in ("Ich heiße Anna.", "Ich mag Tee."):
        run_turn(user=user, character=session.character, session=session, text=text)
    expected = "[GESPRAECHSVERLAUF]\nNutzer: Ich heiße Anna.\nNova: Ok."
    composer = [r for r in fake_llm.chat_requests() if is_composer(r)][-1]
    responder = [r for r in fake_llm.chat_requests() if is_responder(r)][-1]
    for request in (composer, responder):
        assert expected in request["messages"][0]["content"]
    assert responder["messages"][-1] == {"role": "user", "content": "Ich mag Tee."}


def test_deviation_between_content_and_reply_is_measured(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.add("Dein Hund heißt Bello.", match=is_composer)
    fake_llm.add("Dein Hund heißt Bello und liebt Käsebrot.", match=is_responder)
    result = run_turn(
        user=user, character=session.character, session=session, text="Wie heißt mein Hund?"
    )
    turn = Turn.objects.get(pk=result.turn_id)
    # reply content words: hund, heißt, bello, liebt, käsebrot → two of five are new.
    assert turn.deviation == pytest.approx(0.4)
    row = PipelineLog.objects.get(turn=turn, node="responder")
    assert row.details["neue_woerter"] == ["käsebrot", "liebt"]
    assert Turn.objects.get(reply_to=turn).deviation == pytest.approx(0.4)


@pytest.mark.parametrize(
    ("reply", "outcome", "undelivered"),
    [
        pytest.param(
            "Laut notizen/hausbau.md:4-5 am Donnerstag.", "keine_direktiven", [], id="delivered"
        ),
        pytest.param(
            "Laut notizen/hausbau.md:40-42 am Donnerstag.",
            "zitat_ohne_beleg",
            ["notizen/hausbau.md:40-42"],
            id="lines-outside",
        ),
        pytest.param(
            "Das steht in plan/kosten.md:2.",
            "zitat_ohne_beleg",
            ["plan/kosten.md:2"],
            id="other-file",
        ),
    ],
)
def test_tribunal_checks_every_named_citation_against_the_delivered_records(
    fake_llm: FakeOpenAI,
    session: Session,
    user: Any,
    records: list[dict[str, Any]],
    reply: str,
    outcome: str,
    undelivered: list[str],
) -> None:
    fake_llm.add(reply, match=is_responder)
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="tribunal")
    assert row.outcome == outcome
    assert row.details["zitate"]["ohne_beleg"] == undelivered
    assert Turn.objects.get(pk=result.turn_id).checks["zitate"]["ohne_beleg"] == undelivered


def test_a_citation_without_any_records_delivered_is_flagged(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.add("Siehe notizen/hausbau.md:3-7.", match=is_responder)
    result = run_turn(user=user, character=session.character, session=session, text="Und?")
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="tribunal")
    assert row.outcome == "zitat_ohne_beleg"


@pytest.mark.parametrize(
    ("script", "step"),
    [
        # A failure before the first word falls back to the offline voice instead
        # (tests/test_fallbacks.py); one after words were sent fails the turn.
        pytest.param({"break_stream_after": 2}, "llm_abbruch_im_stream", id="broken-stream"),
    ],
)
def test_llm_failure_in_the_responder_is_a_failed_turn_and_stores_no_memory(
    fake_llm: FakeOpenAI, session: Session, user: Any, script: dict[str, Any], step: str
) -> None:
    fake_llm.add("Das ist eine lange Antwort, die abbricht.", match=is_responder, **script)
    tokens: list[str] = []
    result = run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Mein Hund heißt Bello.",
        on_token=tokens.append,
    )
    assert result.status == "fehler"
    assert result.step == step
    assert "Sprachmodell ist nicht erreichbar" in result.reply
    assert "".join(tokens) == result.reply  # the person saw the sentence, streamed
    turn = Turn.objects.get(pk=result.turn_id)
    assert turn.status == "fehler"
    logs = {r.node: r.outcome for r in PipelineLog.objects.filter(turn=turn)}
    assert logs["responder"] == step
    assert logs["gedaechtnis"] == "nicht_gespeichert_fehler"
    assert not MemoryEntry.objects.filter(user=user).exists()


def test_llm_failure_in_the_composer_falls_back_before_the_responder(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.add("x", match=is_composer, status=503)
    result = run_turn(
        user=user, character=session.character, session=session, text="Mein Hund heißt Bello."
    )
    # Issue 13: the offline composer decides the content, the responder still comes after it.
    assert result.status == "abgeschlossen"
    composer = PipelineLog.objects.get(turn_id=result.turn_id, node="composer")
    assert (composer.outcome, composer.details["modellfehler"]) == ("ersatz_offline", "http_fehler")
    assert len([r for r in fake_llm.chat_requests() if is_responder(r)]) == 1


def test_one_turn_vector_is_embedded_once_and_reused_for_the_memory(
    session: Session, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[str]] = []
    real = embeddings.embed

    def counting(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return real(texts)

    monkeypatch.setattr(embeddings, "embed", counting)
    result = run_turn(
        user=user, character=session.character, session=session, text="Mein Hund heißt Bello."
    )
    assert calls == [["Mein Hund heißt Bello."]]
    entry = MemoryEntry.objects.get(user=user)
    assert entry.text == "Mein Hund heißt Bello." and entry.kind == "kzg"
    assert entry.source_turn_id == result.turn_id and entry.expires_at is not None
    assert list(entry.embedding) == pytest.approx(real(["Mein Hund heißt Bello."])[0], abs=1e-5)


def test_offline_memory_from_another_session_answers_the_question(
    session: Session, user: Any
) -> None:
    run_turn(user=user, character=session.character, session=session, text="Mein Hund heißt Bello.")
    later = SessionFactory(user=user, character=session.character)
    result = run_turn(
        user=user, character=later.character, session=later, text="Wie heißt mein Hund?"
    )
    assert "Bello" in result.reply and "Ich erinnere mich" in result.reply
    turn = Turn.objects.get(pk=result.turn_id)
    assert "[GEDAECHTNIS]" in turn.prompts["composer"][0]["content"]
    entry = MemoryEntry.objects.get(user=user, text="Mein Hund heißt Bello.")
    assert entry.recall_count == 1
    # The question itself is not stored as a memory, nor is Nova's restating reply.
    assert MemoryEntry.objects.filter(user=user).count() == 1


def test_memory_of_another_person_is_never_recalled(
    session: Session, user: Any, other_user: Any
) -> None:
    theirs = SessionFactory(user=other_user, character=session.character)
    run_turn(
        user=other_user, character=theirs.character, session=theirs, text="Mein Hund heißt Rex."
    )
    result = run_turn(
        user=user, character=session.character, session=session, text="Wie heißt mein Hund?"
    )
    assert "Rex" not in result.reply
    assert Turn.objects.get(pk=result.turn_id).memories == []


def test_recalled_memory_is_promoted_to_long_term(session: Session, user: Any) -> None:
    run_turn(user=user, character=session.character, session=session, text="Mein Hund heißt Bello.")
    entry = MemoryEntry.objects.get(user=user)
    assert entry.kind == "kzg" and entry.salience == pytest.approx(0.8)
    entry.salience = 0.75
    entry.save(update_fields=["salience"])
    later = SessionFactory(user=user, character=session.character)
    run_turn(user=user, character=later.character, session=later, text="Wie heißt mein Hund?")
    entry.refresh_from_db()
    assert entry.kind == "lzg" and entry.expires_at is None and entry.promoted_at is not None


def test_record_based_answer_is_remembered_with_its_provenance_not_its_content(
    session: Session, user: Any, records: list[dict[str, Any]]
) -> None:
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    assert "notizen/hausbau.md:3-7" in result.reply  # offline composer: records with citation
    assert "nicht meine Erinnerung" in result.reply
    stored = MemoryEntry.objects.get(user=user)
    assert stored.text.startswith("Auskunft aus Aufzeichnungen, nicht aus eigener Erinnerung")
    assert "notizen/hausbau.md:3-7" in stored.text
    assert "Lindenweg" not in stored.text and "14 Uhr" not in stored.text
    assert stored.provenance == {
        "quelle": "aufzeichnungen",
        "citations": ["notizen/hausbau.md:3-7"],
    }


def test_offline_responder_applies_the_sie_form_the_directives_demand(
    session: Session, user: Any, directives_stub: dict[str, str]
) -> None:
    run_turn(user=user, character=session.character, session=session, text="Mein Hund heißt Bello.")
    directives_stub["block"] = "[DIREKTIVEN]\n- Sieze mich ab sofort immer."
    later = SessionFactory(user=user, character=session.character)
    result = run_turn(
        user=user, character=later.character, session=later, text="Wie heißt mein Hund?"
    )
    assert "Sie haben mir gesagt" in result.reply
    assert "Du hast" not in result.reply
    assert "Bello" in result.reply


@pytest.fixture
def asking_agent() -> Iterator[NoteAgent]:
    agent = NoteAgent()
    agents.register_agent(agent)
    yield agent
    agents.unregister_agent(agent.name)


def test_confirmation_question_reaches_the_person_word_for_word(
    fake_llm: FakeOpenAI, session: Session, user: Any, asking_agent: NoteAgent
) -> None:
    result = run_turn(
        user=user, character=session.character, session=session, text="Merke dir: Blau"
    )
    pending = PendingQuestion.objects.get(session=session, status="offen")
    assert result.status == "rueckfrage"
    assert result.reply == pending.question == result.question
    # No model may re-voice the question: the only model call is the router's reading.
    assert [r for r in fake_llm.chat_requests() if not is_router(r)] == []
    logs = {r.node: r.outcome for r in PipelineLog.objects.filter(turn_id=result.turn_id)}
    assert logs["responder"] == "rueckfrage_wortgleich"
    assert logs["composer"] == "uebersprungen_rueckfrage"
    assert logs["gedaechtnis"] == "aufgabe_nicht_gespeichert"

    fake_llm.set_default("Erledigt, Blau ist notiert.")
    done = run_turn(user=user, character=session.character, session=session, text="Ja")
    assert done.status == "abgeschlossen"
    composer = request_of(fake_llm, is_composer)["messages"][0]["content"]
    assert "[AUFGABE]" in composer and "„Blau“ ist notiert" in composer
    pending.refresh_from_db()
    assert pending.status == "ausgefuehrt"
    assert not MemoryEntry.objects.filter(user=user).exists()


def test_offline_backend_answers_without_any_server(session: Session, user: Any) -> None:
    result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    assert result.status == "abgeschlossen"
    assert "Offline-Modus" in result.reply
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="responder")
    assert row.details["backend"] == "offline"
    vector = PipelineLog.objects.get(turn_id=result.turn_id, node="gespraechsvektor")
    assert vector.outcome == "bestimmt" and vector.details["quelle"] == "regeln"


def test_log_lines_are_json_and_carry_the_turn_id(
    session: Session, user: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from novaberg.logging import ContextFilter, JsonFormatter

    caplog.handler.addFilter(ContextFilter())
    with caplog.at_level(logging.INFO, logger="novaberg.turn"):
        result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    lines = [r for r in caplog.records if r.name.startswith("novaberg.turn")]
    assert lines, "the turn wrote no log line"
    for record in lines:
        payload = json.loads(JsonFormatter().format(record))
        assert payload["turn_id"] == result.turn_id


def test_offline_answer_quotes_the_cited_lines_with_their_citation(
    session: Session, user: Any, records: list[dict[str, Any]]
) -> None:
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    # The words at the citation, not the file's summary: the person can check them there.
    assert "notizen/hausbau.md:3-7: „Donnerstag 14 Uhr: Architekt Brenner" in result.reply
    assert "Termin mit dem Architekten" not in result.reply
    assert "Aufzeichnungen" in result.reply and "nicht meine Erinnerung" in result.reply


def test_offline_answer_marks_an_archived_record(
    session: Session, user: Any, records: list[dict[str, Any]]
) -> None:
    records[0]["archived"] = True
    result = run_turn(
        user=user, character=session.character, session=session, text="Wann kommt Brenner?"
    )
    assert "(archiviert – abgelöst, nicht geltend)" in result.reply
