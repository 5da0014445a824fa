"""Stop and disconnect cancel a running turn (issue 13 "Budgets", issue 15 "Stop").

Against a model that never stops talking (the fake server's endless stream), through a real
daphne process and the real Redis channel layer: the person's ``{"type": "stop"}`` frame and a
client that goes away each close the upstream stream (the fake server sees the hang-up), the
turn is stored ``abgebrochen`` with what had been said, no node after the responder runs, and
the next turn of the session runs normally. The HTTP variant ends at the turn's deadline with a
German sentence instead of holding the request.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from conversation.models import Character, PipelineLog, Turn
from conversation.tests.socket_client import SocketClient
from conversation.vocabulary import Status
from novaberg.llm import get_gateway
from tests.factories import SessionFactory, UserFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.processes import free_port, log_dir, start_daphne, stop

pytestmark = [pytest.mark.django_db(transaction=True)]

ENDLESS = "und dann erzählte Nova immer weiter "
# What a loaded 2-core machine may add to a deadline (thread start, HTTP, teardown).
SLACK_S = 4.0


def streamed(body: dict[str, Any]) -> bool:
    return bool(body.get("stream"))


@pytest.fixture(scope="module", autouse=True)
def _model_loaded() -> None:
    # Loading the embedding model takes seconds to a minute on a busy machine and cannot be
    # interrupted; the deadline under test must not measure it (daphne warms it up at start).
    from novaberg import embeddings

    embeddings.warm_up()


class Daphne:
    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.log = log
        self.origin = f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def daphne(django_db_setup: None, _fake_openai_server: FakeOpenAI) -> Iterator[Daphne]:
    port = free_port()
    log = log_dir() / "test-stop-daphne.log"
    proc = start_daphne(
        port,
        log_path=log,
        NOVABERG_LLM_BASE_URL=_fake_openai_server.base_url,
        NOVABERG_LLM_API_KEY="test",
        NOVABERG_LLM_MODEL="fake-model",
        NOVABERG_LLM_MAX_RETRIES="0",
        NOVABERG_LOG_LEVEL="INFO",
    )
    try:
        yield Daphne(port, log)
    finally:
        stop(proc)


@pytest.fixture
def chat(fake_openai: FakeOpenAI) -> tuple[int, str, Any]:
    """A person's session, the cookie that logs her in, and the user: (id, cookie, user)."""
    nova = Character.objects.get(name="Nova")
    user = UserFactory.create(username="anna")
    session = SessionFactory.create(user=user, character=nova)
    browser = Client()
    browser.force_login(user)
    return session.pk, f"sessionid={browser.cookies['sessionid'].value}", user


async def open_chat(daphne: Daphne, chat: tuple[int, str, Any]) -> SocketClient:
    session_id, cookie, _ = chat
    return await SocketClient.open(
        daphne.port, f"/ws/sessions/{session_id}/", origin=daphne.origin, cookie=cookie
    )


def wait_for(check: Callable[[], Any], timeout_s: float = 15.0) -> Any:
    """Poll ``check`` until it returns something truthy; fail at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"nothing within {timeout_s} s")


def finished_turn(session_id: int, text: str) -> Turn | None:
    turn = Turn.objects.filter(session_id=session_id, role="user", text=text).first()
    return turn if turn is not None and turn.finished_at is not None else None


def nodes_of(turn: Turn) -> list[str]:
    return list(
        PipelineLog.objects.filter(turn=turn).order_by("position").values_list("node", flat=True)
    )


def assert_stopped(turn: Turn, step: str, said: str) -> None:
    """Stored as stopped, with what had been said, and nothing ran on the cut reply."""
    assert (turn.status, turn.step) == (Status.CANCELLED, step)
    reply = Turn.objects.get(reply_to=turn)
    assert reply.status == Status.CANCELLED
    assert reply.text.strip() == said.strip()
    nodes = nodes_of(turn)
    assert "responder" in nodes and nodes[-1] == "abbruch"
    assert "tribunal" not in nodes and "gedaechtnis" not in nodes
    row = PipelineLog.objects.get(turn=turn, node="abbruch")
    assert row.outcome == step and row.details["nach_knoten"] == "responder"


def test_the_stop_frame_cancels_the_reply_upstream_and_the_next_turn_runs(
    daphne: Daphne, chat: tuple[int, str, Any], fake_openai: FakeOpenAI
) -> None:
    fake_openai.add(ENDLESS, endless=True, chunk_delay_s=0.02, match=streamed)
    fake_openai.add("Gern, worüber möchtest du reden?", match=streamed)

    async def scenario() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        client = await open_chat(daphne, chat)
        try:
            await client.send_json({"text": "Erzähl mir eine lange Geschichte."})
            events = [await client.receive_json()]
            assert events[0]["type"] == "start", events
            while sum(e["type"] == "token" for e in events) < 3:
                events.append(await client.receive_json())
            await client.send_json({"type": "stop"})
            events += await client.turn(timeout=15)
            await client.send_json({"text": "Dann etwas anderes."})
            after = await client.turn(timeout=30)
            return events, after[-1]
        finally:
            await client.close()

    t0 = time.monotonic()
    events, next_done = asyncio.run(scenario())
    done = events[-1]
    assert done["type"] == "done", events
    assert (done["status"], done["step"]) == ("abgebrochen", "stopp")
    said = "".join(e["text"] for e in events if e["type"] == "token")
    # (the done frame's reply is trimmed by its serializer; the stored text is as said)
    assert said.startswith("und dann erzählte Nova") and done["reply"] == said.strip()
    # The endless model was hung up on, not left to run into the turn's deadline.
    assert fake_openai.wait_for_disconnect(timeout_s=5)
    assert time.monotonic() - t0 < 30
    turn = Turn.objects.get(pk=done["turn_id"])
    assert_stopped(turn, "stopp", said)
    # The session lock was released: the next message is answered as usual.
    assert next_done["type"] == "done"
    assert (next_done["status"], next_done["reply"]) == (
        "abgeschlossen",
        "Gern, worüber möchtest du reden?",
    )


def test_a_client_that_goes_away_mid_reply_cancels_the_turn(
    daphne: Daphne, chat: tuple[int, str, Any], fake_openai: FakeOpenAI
) -> None:
    session_id = chat[0]
    fake_openai.add(ENDLESS, endless=True, chunk_delay_s=0.02, match=streamed)
    text = "Erzähl, bis ich gehe."

    async def scenario() -> None:
        client = await open_chat(daphne, chat)
        await client.send_json({"text": text})
        assert (await client.receive_json())["type"] == "start"
        assert (await client.receive_json())["type"] == "token"
        await client.close()

    asyncio.run(scenario())
    assert fake_openai.wait_for_disconnect(timeout_s=10)
    turn = wait_for(lambda: finished_turn(session_id, text))
    reply = Turn.objects.get(reply_to=turn)
    assert reply.text.startswith("und dann") and len(reply.text) < 5000
    assert_stopped(turn, "verbindung_getrennt", reply.text)


def test_a_client_that_leaves_the_streamed_http_answer_cancels_the_turn(
    daphne: Daphne, chat: tuple[int, str, Any], fake_openai: FakeOpenAI
) -> None:
    from rest_framework.authtoken.models import Token

    session_id, _, user = chat
    token = f"Token {Token.objects.get_or_create(user=user)[0].key}"
    fake_openai.add(ENDLESS, endless=True, chunk_delay_s=0.02, match=streamed)
    text = "Erzähl über HTTP, bis ich auflege."
    body = json.dumps({"text": text}).encode()
    request = (
        f"POST /api/sessions/{session_id}/messages/?stream=1 HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{daphne.port}\r\nAuthorization: {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection(("127.0.0.1", daphne.port), timeout=30) as conn:
        conn.sendall(request)
        seen = b""
        # The answer streams: token lines arrive while the model is still talking.
        while seen.count(b'"type": "token"') < 3:
            chunk = conn.recv(4096)
            assert chunk, seen
            seen += chunk
        assert b" 200 " in seen.split(b"\r\n", 1)[0]
    assert fake_openai.wait_for_disconnect(timeout_s=10)
    turn = wait_for(lambda: finished_turn(session_id, text))
    reply = Turn.objects.get(reply_to=turn)
    assert_stopped(turn, "verbindung_getrennt", reply.text)


@pytest.mark.parametrize("query", ["", "?stream=1"], ids=["plain", "stream"])
def test_the_http_turn_ends_at_its_deadline_with_a_german_sentence(
    fake_llm: FakeOpenAI, settings: Any, query: str
) -> None:
    from tests.fixtures import token_client

    # Every call of the turn meets a model that never finishes; without the turn's deadline
    # the first call alone would wait for its own (15 s and more).
    settings.TURN_TOTAL_S = 1.0
    settings.LLM_TIMEOUT_S = 30.0
    # The first call of a process imports the client's lazy modules (seconds on a busy
    # machine); the clock under test must not measure that.
    get_gateway().chat([{"role": "user", "content": "Hallo"}], purpose="composer")
    fake_llm.add(ENDLESS, endless=True, times=50)
    nova = Character.objects.get(name="Nova")
    user = UserFactory.create(username="bert")
    session = SessionFactory.create(user=user, character=nova)
    api = token_client(user)

    t0 = time.monotonic()
    answer = api.post(
        f"/api/sessions/{session.pk}/messages/{query}", {"text": "Hallo?"}, format="json"
    )
    if query:
        body = b"".join(answer.streaming_content)  # type: ignore[attr-defined]
        lines = [json.loads(line) for line in body.splitlines()]
        done = lines[-1]
        assert done["type"] == "done"
    else:
        done = answer.json()
    wall = time.monotonic() - t0

    assert answer.status_code == 200
    timings = list(PipelineLog.objects.filter(turn_id=done["turn_id"]).values_list("node", "ms"))
    assert wall < 1.0 + SLACK_S, timings
    assert (done["status"], done["step"]) == ("fehler", "zeitlimit_zug")
    assert done["reply"] == (
        "Die Antwort hat zu lange gedauert und wurde nach 1 Sekunde abgebrochen. "
        "Die Nachricht ist gespeichert; bitte gleich noch einmal versuchen."
    )
    turn = Turn.objects.get(pk=done["turn_id"])
    assert turn.status == Status.FAILED and nodes_of(turn)[-1] == "abbruch"
