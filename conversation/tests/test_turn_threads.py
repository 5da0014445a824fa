"""Turns of many sockets wait for the model side by side, not in a queue for a thread.

A turn spends most of its time waiting for the model. In asyncio's default pool (6 threads on
two cores) the seventh socket's turn waited for a free thread, not for the model: with 100
clients the server overhead grew to seconds (bench_conversation). Here ten sockets each start
a turn whose run waits until all ten are running at once; in a pool of six it never gets there.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections

from conversation import consumers
from conversation.models import Session
from conversation.routing import websocket_urlpatterns

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("fresh_channel_layer"),
]

APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
SOCKETS = 10


async def test_ten_turns_wait_for_the_model_at_the_same_time(
    pair: tuple[Any, Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert consumers.turn_executor()._max_workers >= SOCKETS
    all_running = threading.Barrier(SOCKETS, timeout=20)
    met: list[str] = []

    def waiting_for_the_model(*_args: Any) -> Any:
        all_running.wait()  # BrokenBarrierError when fewer than ten run at once
        met.append(threading.current_thread().name)
        raise RuntimeError("the model is not part of this test")

    monkeypatch.setattr(consumers, "_run", waiting_for_the_model)
    user, session = pair
    comms = []
    for _ in range(SOCKETS):
        comm = WebsocketCommunicator(APP, f"/ws/sessions/{session.pk}/")
        comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
        assert (await comm.connect(timeout=30))[0]  # a busy machine
        comms.append(comm)
    try:
        for comm in comms:
            await comm.send_json_to({"text": "Hallo Nova"})

        async def end_of(comm: WebsocketCommunicator) -> dict[str, Any]:
            while (frame := await comm.receive_json_from(timeout=40))["type"] == "start":
                pass
            return frame

        ends = await asyncio.gather(*(end_of(c) for c in comms))
    finally:
        for comm in comms:
            await comm.disconnect()
        # The handshakes' queries ran in asgiref's one thread: close its connection, or the
        # test database cannot be dropped at the end of the run.
        await sync_to_async(connections.close_all)()
    assert len(met) == SOCKETS  # all ten were running at once
    assert all(name.startswith("novaberg-turn") for name in met)
    assert [e["type"] for e in ends] == ["error"] * SOCKETS  # and each person was told
