"""The chat WebSocket through a real daphne process and the real Redis channel layer, with a raw
client (conversation/tests/socket_client.py) that chooses its Origin and its frames.

Daphne runs once for this module, on the test database (committed rows: ``transactional_db``)
and the test's Redis database; its log is read for tracebacks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.test import Client

from conversation.consumers import NOT_JSON, NOT_TEXT
from conversation.models import Character
from conversation.tests.socket_client import Closed, Refused, SocketClient
from tests.factories import SessionFactory, UserFactory
from tests.processes import free_port, log_dir, start_daphne, stop

pytestmark = [pytest.mark.django_db(transaction=True)]


class Daphne:
    def __init__(self, port: int, log: Path) -> None:
        self.port = port
        self.log = log
        self.origin = f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def daphne(django_db_setup: None) -> Iterator[Daphne]:
    port = free_port()
    log = log_dir() / "test-socket-daphne.log"
    proc = start_daphne(port, log_path=log, NOVABERG_LLM_BASE_URL="", NOVABERG_LOG_LEVEL="INFO")
    try:
        yield Daphne(port, log)
    finally:
        stop(proc)


@pytest.fixture
def chat() -> tuple[int, str]:
    """A person's session and the browser cookie that logs them in: (session id, cookie)."""
    nova = Character.objects.get(name="Nova")
    user = UserFactory.create(username="anna")
    session = SessionFactory.create(user=user, character=nova)
    browser = Client()
    browser.force_login(user)
    return session.pk, f"sessionid={browser.cookies['sessionid'].value}"


def log_size(daphne: Daphne) -> int:
    return daphne.log.stat().st_size


def log_since(daphne: Daphne, offset: int) -> str:
    with daphne.log.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace")


async def open_chat(daphne: Daphne, chat: tuple[int, str], **kwargs: Any) -> SocketClient:
    session_id, cookie = chat
    kwargs.setdefault("origin", daphne.origin)
    return await SocketClient.open(
        daphne.port, f"/ws/sessions/{session_id}/", cookie=cookie, **kwargs
    )


async def answered(client: SocketClient, text: str) -> dict[str, Any]:
    await client.send_json({"text": text})
    events = await client.turn()
    assert events[0]["type"] == "start", events
    assert events[-1]["type"] == "done", events
    return events[-1]


# --- origin ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [
        pytest.param("http://127.0.0.1:9999", id="foreign-port"),
        pytest.param("https://127.0.0.1:{port}", id="foreign-scheme"),
        pytest.param("http://localhost:{port}", id="other-host-name"),
        pytest.param("http://evil.example", id="foreign-host"),
        pytest.param("null", id="opaque-origin"),
        pytest.param(None, id="no-origin"),
    ],
)
def test_a_foreign_origin_cannot_open_the_chat(
    daphne: Daphne, chat: tuple[int, str], origin: str | None
) -> None:
    # The cookie is the person's: a page on another origin gets it sent along by the browser.
    value = origin.format(port=daphne.port) if origin else None
    with pytest.raises(Refused) as refused:
        asyncio.run(open_chat(daphne, chat, origin=value))
    assert refused.value.status == 403


def test_the_apps_own_origin_chats(daphne: Daphne, chat: tuple[int, str]) -> None:
    async def scenario() -> dict[str, Any]:
        client = await open_chat(daphne, chat)
        try:
            return await answered(client, "Hallo Nova")
        finally:
            await client.close()

    assert asyncio.run(scenario())["reply"]


def test_a_host_name_the_app_does_not_serve_is_refused_even_as_its_own_origin(
    daphne: Daphne, chat: tuple[int, str]
) -> None:
    # DNS rebinding: evil.example resolves to 127.0.0.1; Host and Origin agree, but the host
    # is not one of DJANGO_ALLOWED_HOSTS.
    evil = f"evil.example:{daphne.port}"
    with pytest.raises(Refused) as refused:
        asyncio.run(open_chat(daphne, chat, origin=f"http://{evil}", host=evil))
    assert refused.value.status == 403


# --- frames ------------------------------------------------------------------------------------


def test_a_frame_that_is_not_json_or_not_text_gets_a_german_answer_and_the_chat_goes_on(
    daphne: Daphne, chat: tuple[int, str]
) -> None:
    offset = log_size(daphne)

    async def scenario() -> list[dict[str, Any]]:
        client = await open_chat(daphne, chat)
        try:
            await client.send_text("das ist kein json {")
            not_json = await client.receive_json()
            await client.send_binary(b"\x00\x01\x02")
            not_text = await client.receive_json()
            done = await answered(client, "Bist du noch da?")
            return [not_json, not_text, done]
        finally:
            await client.close()

    not_json, not_text, done = asyncio.run(scenario())
    assert not_json == {"type": "error", "text": NOT_JSON}
    assert not_text == {"type": "error", "text": NOT_TEXT}
    assert done["reply"]
    assert "Traceback" not in log_since(daphne, offset)


# --- idle and stalls ---------------------------------------------------------------------------


@pytest.mark.slow
def test_an_idle_chat_stays_connected_for_30_seconds_and_then_answers(
    daphne: Daphne, chat: tuple[int, str]
) -> None:
    # redis-py's 5 s socket timeout ended channels_redis' 5 s blocking read: 1011 after 5 s.
    offset = log_size(daphne)

    async def scenario() -> dict[str, Any]:
        client = await open_chat(daphne, chat)
        try:
            await client.idle(30)
            return await answered(client, "Ich war kurz weg. Bist du noch da?")
        finally:
            await client.close()

    try:
        done = asyncio.run(scenario())
    except Closed as closed:
        pytest.fail(f"the idle chat was closed with {closed.code}")
    assert done["reply"]
    log = log_since(daphne, offset)
    assert "Traceback" not in log and "TimeoutError" not in log


@pytest.mark.slow
def test_a_message_sent_while_redis_stalls_is_answered_during_the_stall(
    daphne: Daphne, chat: tuple[int, str]
) -> None:
    # The chat does not go through Redis (conversation/consumers.py): a stall longer than
    # redis-py's 5 s default neither closes the socket nor holds the reply.
    stall_s = 8
    admin = redis.Redis.from_url(settings.REDIS_URL)

    async def scenario() -> tuple[dict[str, Any], float]:
        client = await open_chat(daphne, chat)
        try:
            admin.execute_command("CLIENT", "PAUSE", stall_s * 1000, "ALL")
            t0 = time.monotonic()
            done = await answered(client, "Hörst du mich trotz der Pause?")
            return done, time.monotonic() - t0
        finally:
            await client.close()

    paused_at = time.monotonic()
    try:
        done, waited = asyncio.run(scenario())
    except Closed as closed:
        pytest.fail(f"the chat was closed with {closed.code} during the stall")
    finally:
        # The next test gets a Redis that answers.
        time.sleep(max(0.0, paused_at + stall_s + 2 - time.monotonic()))
        admin.close()
    assert done["reply"]
    assert waited < stall_s - 1  # answered while Redis was still paused
