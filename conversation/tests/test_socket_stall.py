"""A Redis stall does not reach the chat: open sockets stay open, and a message sent during the
stall is answered in full while Redis is still paused (issue 27: with the turn's frames routed
through the Redis channel layer, 2 of 7 open sockets closed with 1011 during a 10 s stall and
one stored reply was never shown).

The stall is a real one (``CLIENT PAUSE`` on the test's Redis, every client paused)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.db import connections

from conversation.models import Session, Turn
from conversation.routing import websocket_urlpatterns
from tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
STALL_S = 8.0
SOCKETS = 3


@pytest.fixture(scope="module", autouse=True)
def _model_loaded() -> None:
    # Loaded inside a turn, the model holds the GIL for seconds (see test_consumer.py).
    from novaberg import embeddings

    embeddings.warm_up()


async def one_turn(comm: WebsocketCommunicator, timeout_s: float) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        event = await comm.receive_json_from(timeout=timeout_s)
        events.append(event)
        if event["type"] in {"done", "error"}:
            return events


@pytest.mark.slow
async def test_sockets_stay_open_and_answer_while_redis_stalls(pair: tuple[Any, Session]) -> None:
    user, _ = pair

    def more_sessions() -> list[Session]:
        return [
            SessionFactory.create(user=user, character=pair[1].character)
            for _ in range(SOCKETS - 1)
        ]

    sessions = [pair[1], *await sync_to_async(more_sessions)()]
    sockets = []
    for session in sessions:
        comm = WebsocketCommunicator(APP, f"/ws/sessions/{session.pk}/")
        comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
        assert (await comm.connect(timeout=30))[0]
        sockets.append(comm)
    admin = redis.Redis.from_url(django_settings.REDIS_URL)
    try:
        admin.execute_command("CLIENT", "PAUSE", int(STALL_S * 1000), "ALL")
        paused_until = time.monotonic() + STALL_S
        for n, comm in enumerate(sockets):
            await comm.send_json_to({"text": f"Hallo, hier ist Nachricht {n}."})
        turns = [await one_turn(comm, timeout_s=STALL_S + 20) for comm in sockets]
        answered_during_stall = time.monotonic() < paused_until
        # Quiet through the rest of the stall: nothing closes a socket (no 1011).
        await asyncio.sleep(max(0.0, paused_until - time.monotonic()) + 0.5)
        admin.ping()
        for comm in sockets:
            assert await comm.receive_nothing(timeout=0.2), "a frame or a close came unasked"
        # After the stall every socket still answers.
        await sockets[0].send_json_to({"text": "Bist du noch da?"})
        after = await one_turn(sockets[0], timeout_s=30)
    finally:
        admin.close()
        for comm in sockets:
            await comm.disconnect()
    for events in turns:
        assert events[0] == {"type": "start"}
        assert events[-1]["type"] == "done" and events[-1]["reply"], events
    assert answered_during_stall, "the replies waited for Redis"
    assert after[-1]["type"] == "done"
    stored = await sync_to_async(
        lambda: sorted(
            Turn.objects.filter(session__in=sessions, role=Turn.Role.ASSISTANT).values_list(
                "text", flat=True
            )
        )
    )()
    # Queries from here ran in asgiref's one thread: close its connection, or the test
    # database cannot be dropped at the end of the run.
    await sync_to_async(connections.close_all)()
    shown = sorted(events[-1]["reply"] for events in [*turns, after])
    assert stored == shown  # every stored reply was shown, and nothing else
