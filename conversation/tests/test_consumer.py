"""The chat WebSocket through Channels' WebsocketCommunicator and the real Redis channel layer.

The turn runs in a worker thread with its own DB connection, so these tests need committed rows
(``transactional_db``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from conversation.models import Session, Turn
from conversation.routing import websocket_urlpatterns
from tests.factories import UserFactory
from tests.fakes.openai_server import FakeOpenAI

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("fresh_channel_layer"),
]

# channels' stubs ask for their private URL pattern type; Django's path() gives URLPattern.
APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]


def communicator(session_id: int, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(APP, f"/ws/sessions/{session_id}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
    return comm


async def one_turn(comm: WebsocketCommunicator) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        event = await comm.receive_json_from(timeout=30)
        events.append(event)
        if event["type"] in {"done", "error"}:
            return events


@pytest.fixture(scope="module", autouse=True)
def _model_loaded() -> None:
    # Loading the embedding model holds the GIL for seconds; done inside a turn it starves the
    # channel layer's Redis reads of this test's event loop (daphne warms it up at start too).
    from novaberg import embeddings

    embeddings.warm_up()


async def test_websocket_without_login_is_closed(pair: tuple[Any, Session]) -> None:
    from django.contrib.auth.models import AnonymousUser

    _, session = pair
    connected, code = await communicator(session.pk, AnonymousUser()).connect()
    assert (connected, code) == (False, 4401)


async def test_another_persons_session_is_closed(pair: tuple[Any, Session]) -> None:
    _, session = pair
    bert = await sync_to_async(UserFactory)(username="bert")
    connected, code = await communicator(session.pk, bert).connect()
    assert (connected, code) == (False, 4404)


async def test_reply_streams_token_by_token_and_done_comes_last(
    fake_llm: FakeOpenAI, pair: tuple[Any, Session]
) -> None:
    user, session = pair
    # Tokens 60 ms apart: slower than the sender's 30 ms coalescing, so each sentence (the
    # guard sends whole checked sentences) is its own frame.
    fake_llm.add(
        "Schön. Dass du da bist. Erzähl mir mehr. Bitte.",
        chunk_delay_s=0.06,
        match=lambda body: bool(body.get("stream")),
    )
    comm = communicator(session.pk, user)
    assert (await comm.connect())[0]
    await comm.send_json_to({"text": "Hallo"})
    events = await one_turn(comm)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "start" and kinds[-1] == "done"
    assert set(kinds[1:-1]) == {"token"} and len(kinds) > 4
    done = events[-1]
    assert "".join(e["text"] for e in events[1:-1]) == done["reply"]
    assert done["status"] == "abgeschlossen" and done["ttft_ms"] <= done["total_ms"]
    await comm.disconnect()


async def test_two_messages_on_one_socket_and_two_tabs_stay_ordered(
    fake_llm: FakeOpenAI, pair: tuple[Any, Session]
) -> None:
    user, session = pair
    fake_llm.set_default(lambda body: "Antwort auf: " + body["messages"][-1]["content"])
    tab1, tab2 = communicator(session.pk, user), communicator(session.pk, user)
    assert (await tab1.connect())[0] and (await tab2.connect())[0]
    await tab1.send_json_to({"text": "eins"})
    await tab1.send_json_to({"text": "zwei"})
    await tab2.send_json_to({"text": "drei"})

    async def two_turns() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        return await one_turn(tab1), await one_turn(tab1)

    (first, second), third = await asyncio.gather(two_turns(), one_turn(tab2))
    # One socket: the second turn starts only after the first is done.
    assert [e["type"] for e in first].count("start") == 1
    replies = [first[-1]["reply"], second[-1]["reply"], third[-1]["reply"]]
    assert replies[0].endswith("eins") and replies[1].endswith("zwei")
    assert replies[2].endswith("drei")

    def stored() -> list[tuple[str, str]]:
        return list(Turn.objects.filter(session=session).values_list("role", "text"))

    rows = await sync_to_async(stored)()
    # Every reply directly follows its own message: the session lock kept turns whole.
    for i in range(0, len(rows), 2):
        assert rows[i][0] == "user" and rows[i + 1][0] == "assistant"
        assert rows[i + 1][1].endswith(rows[i][1])
    await tab1.disconnect()
    await tab2.disconnect()


async def test_a_client_that_disconnects_mid_stream_stops_the_turn_and_keeps_what_was_said(
    fake_llm: FakeOpenAI, pair: tuple[Any, Session]
) -> None:
    user, session = pair
    full = "Eins. Zwei. Drei. Vier. Fünf. Sechs. Sieben."  # sentences: the guard sends each
    fake_llm.add(full, chunk_delay_s=0.1, match=lambda b: bool(b.get("stream")))
    comm = communicator(session.pk, user)
    assert (await comm.connect())[0]
    await comm.send_json_to({"text": "Erzähl"})
    assert (await comm.receive_json_from(timeout=30))["type"] == "start"
    assert (await comm.receive_json_from(timeout=30))["type"] == "token"
    await comm.disconnect()

    def finished() -> Turn | None:
        return Turn.objects.filter(session=session, role="assistant").first()

    for _ in range(100):
        reply = await sync_to_async(finished)()
        if reply is not None:
            break
        await asyncio.sleep(0.1)
    # Nobody reads the rest: the model call ends, the turn is stored as far as it got (issue 13).
    assert reply is not None and reply.status == "abgebrochen"
    assert reply.text and full.startswith(reply.text) and reply.text != full


async def test_a_50000_character_message_is_refused_with_a_reason(
    pair: tuple[Any, Session],
) -> None:
    user, session = pair
    comm = communicator(session.pk, user)
    assert (await comm.connect())[0]
    await comm.send_json_to({"text": "x" * 50_000})
    done = (await one_turn(comm))[-1]
    assert (done["status"], done["step"]) == ("fehler", "zu_lang")
    assert "zu lang" in done["reply"]
    await comm.disconnect()
