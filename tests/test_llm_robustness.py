"""Robustness of the whole app against a real language model (`make test-llm`; skipped without
NOVABERG_LLM_BASE_URL). The packaged small model babbles and breaks JSON: these tests assert
what a person would notice whatever the model says — every turn ends within its deadline, an
order reaches its confirmation question (by the model or by the offline fallback), "nein" and a
garbage answer write nothing, the WebSocket stream is one the chat can show, and Stop ends the
reply and the generation upstream. The ten-turn conversation writes its per-turn times to
bench/results/real_llm.md (the README's performance section quotes it)."""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from bench import _django as bench_results
from conversation import address
from conversation.models import Character, PendingQuestion, Session
from conversation.pipeline import TurnResult, run_turn
from conversation.tests.socket_client import SocketClient
from conversation.vocabulary import QuestionStatus, Status
from directives.models import Directive
from files.tests.watcher_helpers import make_root, write
from files.watcher import index_root_run
from tests.factories import SessionFactory, UserFactory
from tests.processes import free_port, log_dir, start_daphne, stop
from tests.real_llm import (
    SERVER_LOG,
    SERVER_SAW_DISCONNECT,
    SLACK_S,
    Call,
    Calls,
    ServerLog,
    calls_from_log,
    capture_calls,
    late_calls,
    load_embedding_model,
    needs_real_llm,
    turn_deadline_s,
    use_real_llm,
)

pytestmark = needs_real_llm

ORDER = "Sieze mich ab jetzt immer."
STATUSES = {s.value for s in Status}


@pytest.fixture(scope="module", autouse=True)
def _model_loaded() -> None:
    load_embedding_model()


@pytest.fixture
def real_llm(settings: Any) -> None:
    use_real_llm(settings)


@pytest.fixture
def llm_calls() -> Iterator[Calls]:
    with capture_calls() as calls:
        yield calls


def timed_turn(session: Session, text: str) -> tuple[TurnResult, float]:
    t0 = time.monotonic()
    result = run_turn(user=session.user, character=session.character, session=session, text=text)
    return result, time.monotonic() - t0


def assert_in_time(waited: float, calls: Calls) -> None:
    assert waited <= turn_deadline_s() + SLACK_S, f"the turn took {waited:.1f} s"
    assert not late_calls(calls.calls)


# --- the confirmation gate, in process -------------------------------------------------------


@pytest.mark.django_db
def test_an_order_asks_and_nein_writes_nothing(
    real_llm: None, session: Session, llm_calls: Calls
) -> None:
    asked, waited = timed_turn(session, ORDER)
    assert_in_time(waited, llm_calls)
    assert asked.status == Status.QUESTION, (asked.status, asked.step, asked.reply)
    assert asked.question and "Soll ich das so machen?" in asked.question

    refused, waited = timed_turn(session, "nein")
    assert_in_time(waited, llm_calls)
    assert refused.status == Status.DISMISSED, (refused.status, refused.step)
    assert not Directive.objects.filter(user=session.user).exists()


@pytest.mark.django_db
def test_a_garbage_answer_to_the_question_writes_nothing_and_asks_again(
    real_llm: None, session: Session, llm_calls: Calls
) -> None:
    asked, _ = timed_turn(session, ORDER)
    assert asked.status == Status.QUESTION, (asked.status, asked.step, asked.reply)

    garbage, waited = timed_turn(session, "xq7 ### }{ blubb 42 ???")
    assert_in_time(waited, llm_calls)
    assert not Directive.objects.filter(user=session.user).exists()
    # Not an answer: the question is asked again and stays open for the real answer.
    assert "Soll ich das so machen?" in (garbage.question or garbage.reply), garbage
    assert PendingQuestion.objects.filter(session=session, status=QuestionStatus.OPEN).exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("Ich war noch nie in Rom, aber ich möchte bitte mal hin.", id="story"),
        pytest.param("Immer wenn es regnet, bin ich müde.", id="cue-word"),
        pytest.param("asdf jklö ab jetzt ???", id="garbage"),
    ],
)
def test_whatever_the_model_makes_of_a_message_nothing_is_written_without_consent(
    real_llm: None, session: Session, llm_calls: Calls, text: str
) -> None:
    result, waited = timed_turn(session, text)
    assert_in_time(waited, llm_calls)
    assert result.status in STATUSES and result.reply.strip()
    assert not Directive.objects.filter(user=session.user).exists()


# --- the WebSocket, through a real daphne -----------------------------------------------------


@dataclass
class Daphne:
    port: int
    log: Path

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def size(self) -> int:
        return self.log.stat().st_size

    def since(self, offset: int) -> str:
        with self.log.open("rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")


@pytest.fixture(scope="module")
def daphne(django_db_setup: None, _model_loaded: None) -> Iterator[Daphne]:
    port = free_port()
    log = log_dir() / "test-llm-daphne.log"
    # The environment carries NOVABERG_LLM_BASE_URL / _MODEL: this daphne talks to the model.
    proc = start_daphne(port, log_path=log, NOVABERG_LOG_LEVEL="INFO")
    try:
        yield Daphne(port, log)
    finally:
        stop(proc)


@dataclass
class Chat:
    session: Session
    cookie: str


@pytest.fixture
def chat(transactional_db: None) -> Chat:
    user = UserFactory.create(username="anna")
    session = SessionFactory.create(user=user, character=Character.objects.get(name="Nova"))
    browser = Client()
    browser.force_login(user)
    return Chat(session, f"sessionid={browser.cookies['sessionid'].value}")


async def open_chat(daphne: Daphne, chat: Chat) -> SocketClient:
    return await SocketClient.open(
        daphne.port, f"/ws/sessions/{chat.session.pk}/", cookie=chat.cookie, origin=daphne.origin
    )


@dataclass
class Said:
    """One turn as the chat saw it."""

    text: str
    events: list[dict[str, Any]]
    first_token_s: float | None
    total_s: float
    stopped: bool = False

    @property
    def done(self) -> dict[str, Any]:
        return self.events[-1]


async def say(client: SocketClient, text: str, *, stop_after_tokens: int | None = None) -> Said:
    """Send one message, read its turn; with ``stop_after_tokens`` press Stop mid-reply."""
    frame_timeout = turn_deadline_s() + SLACK_S
    t0 = time.monotonic()
    await client.send_json({"text": text})
    events: list[dict[str, Any]] = []
    first: float | None = None
    stopped = False
    tokens = 0
    while True:
        event = await client.receive_json(timeout=frame_timeout)
        if not events and event.get("type") == "note":
            # The tribunal's note on the previous reply comes after that turn's "done".
            assert isinstance(event.get("turn_id"), int) and isinstance(event.get("text"), str)
            assert event["text"].strip(), event
            continue
        events.append(event)
        if event.get("type") == "token":
            tokens += 1
            if first is None:
                first = time.monotonic() - t0
            if stop_after_tokens is not None and tokens == stop_after_tokens and not stopped:
                await client.send_json({"type": "stop"})
                stopped = True
        if event.get("type") in {"done", "error"}:
            return Said(text, events, first, time.monotonic() - t0, stopped)


def assert_valid_for_the_chat(said: Said) -> None:
    """What static/chat.js relies on: "start", then only "token"s with text, then one "done"
    with the reply (or one "error" with a sentence), every field of the right type."""
    types = [e.get("type") for e in said.events]
    assert types[0] == "start", types
    assert types[-1] in {"done", "error"}, types
    assert set(types[1:-1]) <= {"token"}, types
    for event in said.events[1:-1]:
        assert isinstance(event.get("text"), str) and event["text"], event
    streamed = "".join(e["text"] for e in said.events[1:-1])
    assert "\ufffd" not in streamed  # no character broken between two chunks
    end = said.done
    if end["type"] == "error":
        assert isinstance(end.get("text"), str) and end["text"].strip(), end
        return
    assert isinstance(end.get("turn_id"), int)
    assert end.get("status") in STATUSES, end
    assert isinstance(end.get("reply"), str) and isinstance(end.get("reply_html"), str)
    if end["status"] != Status.CANCELLED:
        assert end["reply"].strip(), end  # the person never gets an empty bubble
    assert end.get("question") is None or isinstance(end["question"], str)
    assert isinstance(end.get("records"), list)
    assert isinstance(end.get("total_ms"), int)


def test_the_stream_is_valid_for_the_chat_and_ends_within_the_deadline(
    real_llm: None, daphne: Daphne, chat: Chat
) -> None:
    offset = daphne.size()

    async def scenario() -> Said:
        client = await open_chat(daphne, chat)
        try:
            return await say(client, "Hallo Nova! Wie war dein Tag?")
        finally:
            await client.close()

    said = asyncio.run(scenario())
    assert_valid_for_the_chat(said)
    assert said.done["type"] == "done"
    assert said.total_s <= turn_deadline_s() + SLACK_S
    log = daphne.since(offset)
    assert "Traceback" not in log
    assert not late_calls(calls_from_log(log))


def test_stop_mid_reply_ends_the_turn_and_the_generation_upstream(
    real_llm: None, daphne: Daphne, chat: Chat
) -> None:
    server = ServerLog(SERVER_LOG) if SERVER_LOG is not None else None
    offset = daphne.size()

    async def scenario() -> Said:
        client = await open_chat(daphne, chat)
        try:
            return await say(
                client,
                "Erzähl mir bitte eine lange Geschichte über einen Leuchtturm.",
                stop_after_tokens=1,
            )
        finally:
            await client.close()

    said = asyncio.run(scenario())
    assert said.stopped, f"no reply streamed to stop: {said.events}"
    assert_valid_for_the_chat(said)
    assert said.done.get("status") == Status.CANCELLED, said.done
    log = daphne.since(offset)
    assert "Traceback" not in log
    if server is not None and streamed_from_the_model(said, calls_from_log(log)):
        # The model's stream was cut: llama.cpp's server saw the client go and stopped.
        assert server.wait_for(SERVER_SAW_DISCONNECT, timeout_s=15), server.new_text()[-2000:]


def streamed_from_the_model(said: Said, calls: list[Call]) -> bool:
    """Was the reply Stop cut a model stream (not the responder's offline fallback, which has
    nothing upstream to close)?"""
    return any(
        c.purpose == "responder" and c.outcome == "abgebrochen" for c in _turn_calls(said, calls)
    )


# --- ten turns, measured ----------------------------------------------------------------------

NOTES = {
    "garten.md": "# Garten\n\nDie Tomaten stehen am Südzaun und werden jeden Abend gegossen.\n\n"
    "## Kompost\nDer Kompost wird im März umgesetzt.\n",
    "reise.md": "# Reise nach Lissabon\n\nFlug am 12. Mai, Hotel in der Alfama.\n",
}

# (message, press Stop after this many tokens)
CONVERSATION: list[tuple[str, int | None]] = [
    ("Hallo Nova, schön dich zu sehen!", None),
    (ORDER, None),  # a rule …
    ("ja", None),  # … confirmed
    ("Was steht in meinen Notizen über den Kompost?", None),  # released files
    ("Mir geht es heute richtig gut, die Sonne scheint.", None),  # chit-chat
    ("Welche Regeln gelten für dich gerade?", None),  # a rule question
    ("Erzähl mir bitte eine lange Geschichte über einen Leuchtturm.", 1),  # Stop mid-reply
    ("Entschuldigung, ich musste kurz weg. Wo waren wir?", None),
    ("Was hast du heute noch vor?", None),
    ("Danke, bis morgen!", None),
]


def _release_notes(chat: Chat, base: Path) -> None:
    for name, text in NOTES.items():
        write(base, name, text)
    root = make_root(chat.session.user, chat.session.character, base)
    report = index_root_run(root_id=root.pk)  # in this process: the offline enrichment
    assert report.outcome not in {"laeuft_schon", "nicht_aktiv", "abgebrochen"}, report


def test_a_scripted_conversation_of_ten_turns_finishes_every_turn_in_time(
    daphne: Daphne, chat: Chat, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _release_notes(chat, tmp_path / "notizen")
    offset = daphne.size()
    started = time.monotonic()

    async def scenario() -> list[Said]:
        client = await open_chat(daphne, chat)
        said = []
        try:
            for text, stop_after in CONVERSATION:
                said.append(await say(client, text, stop_after_tokens=stop_after))
        finally:
            await client.close()
        return said

    turns = asyncio.run(scenario())
    wall = time.monotonic() - started
    calls = calls_from_log(daphne.since(offset))
    rows = [_row(i, said, calls) for i, said in enumerate(turns, 1)]
    with capsys.disabled():
        print("\n" + "\n".join(rows))

    for said in turns:
        assert_valid_for_the_chat(said)
        assert said.total_s <= turn_deadline_s() + SLACK_S, (said.text, said.total_s)
    assert turns[1].done.get("status") == Status.QUESTION, turns[1].done
    # "ja" executes the rule first; the reply after it may still run into the turn's deadline.
    assert turns[2].done.get("status") not in {Status.DISMISSED, Status.REJECTED}, turns[2].done
    rules = Directive.objects.filter(user=chat.session.user, active=True)
    assert rules.count() == 1, list(rules.values_list("text", flat=True))
    assert turns[6].stopped and turns[6].done.get("status") == Status.CANCELLED, turns[6].done
    # "Sieze mich" holds from the confirmation on, whatever the model writes: no "du" from Nova
    # reaches the chat, streamed or in the stored reply (the sentence guard, seed 000 §8.3).
    for said in turns[3:]:
        streamed = "".join(e["text"] for e in said.events if e.get("type") == "token")
        assert not address.has_du(streamed), (said.text, streamed)
        assert not address.has_du(said.done.get("reply") or ""), (said.text, said.done)
    assert not late_calls(calls)
    assert "Traceback" not in daphne.since(offset)
    # Only a conversation that kept every promise becomes the README's figure.
    _write_results(turns, rows, calls, wall)


def _turn_calls(said: Said, calls: list[Call]) -> list[Call]:
    turn_id = said.done.get("turn_id")
    return [c for c in calls if c.turn_id is not None and c.turn_id == turn_id]


def _row(i: int, said: Said, calls: list[Call]) -> str:
    mine = _turn_calls(said, calls)
    failed = sum(1 for c in mine if c.outcome != "ok")
    first = f"{said.first_token_s:.1f}" if said.first_token_s is not None else "–"
    status = said.done.get("status", said.done.get("type"))
    text = said.text if len(said.text) <= 48 else said.text[:45] + "…"
    stop = " (Stopp)" if said.stopped else ""
    records = len(said.done.get("records") or [])
    return (
        f"| {i} | {text}{stop} | {status} | {first} | {said.total_s:.1f} | "
        f"{len(mine)} | {failed} | {records} |"
    )


def _write_results(turns: list[Said], rows: list[str], calls: list[Call], wall: float) -> None:
    totals = [s.total_s for s in turns]
    firsts = [s.first_token_s for s in turns if s.first_token_s is not None]
    model = os.environ.get("NOVABERG_LLM_MODEL", "?")
    server = (
        "llama.cpp's server (llama-cpp-python[server], CPU only)"
        if SERVER_LOG
        else "an OpenAI-compatible server"
    )
    markdown = "\n".join(
        [
            "### Real model: a scripted conversation of ten turns",
            "",
            f"`make test-llm`: model `{model}` on {server}, through daphne and the "
            f"WebSocket like the chat; turn deadline {turn_deadline_s():.0f} s, first token "
            "deadline per stream "
            f"{float(django_settings.LLM_FIRST_TOKEN_S):.0f} s. Times as the chat saw them "
            '(send → first token, send → done); model calls, and those that did not end "ok" '
            "(a failure falls back to its node's offline implementation; Stop cancels), from "
            "the gateway's log:",
            "",
            "| # | message | status | first token (s) | turn (s) | model calls | not ok | "
            "records |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Turn median {statistics.median(totals):.1f} s, max {max(totals):.1f} s; first "
            f"token median {statistics.median(firsts) if firsts else 0:.1f} s; "
            f"{len(calls)} model calls in {wall:.0f} s.",
        ]
    )
    bench_results.write_result("real_llm", markdown)
