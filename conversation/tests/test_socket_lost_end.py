"""The end of a turn reaches the person once, also when the channel layer loses it.

channels_redis can lose a message meant for one consumer when another consumer of the same
process is cancelled in the middle of its blocking pop (a disconnect at the wrong moment; seen
in bench_multi: one person waited for a "done" that never came). The consumer therefore
delivers the turn's end directly when the layer has not delivered it within DONE_GRACE_S, and
drops the layer's copy (or late tokens) if they still arrive. The loss is injected on the send
side of the real Redis layer: the event is never sent, exactly what the person would see."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.db import connections

from conversation import consumers
from conversation.models import Session, Turn
from conversation.routing import websocket_urlpatterns

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("fresh_channel_layer"),
]

APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
GRACE_S = 0.5


class LosingLayer:
    """The real channel layer, except that events of the named types are lost on the way."""

    def __init__(self, real: Any, lose: set[str]) -> None:
        self.real = real
        self.lose = lose
        self.lost: list[str] = []

    async def send(self, channel: str, event: dict[str, Any]) -> None:
        if event["type"] in self.lose:
            self.lost.append(event["type"])
            return
        await self.real.send(channel, event)


@pytest.fixture(scope="module", autouse=True)
def _model_loaded() -> None:
    # Loaded inside a turn, the model holds the GIL for seconds (see test_consumer.py).
    from novaberg import embeddings

    embeddings.warm_up()


@pytest.fixture(autouse=True)
def _short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers, "DONE_GRACE_S", GRACE_S)


async def frames_of_turn(comm: WebsocketCommunicator, quiet_s: float) -> list[dict[str, Any]]:
    """Every frame up to the turn's end, and then every further one until none came for
    quiet_s (a second "done" would come within the grace)."""
    frames = [await comm.receive_json_from(timeout=60)]
    while frames[-1]["type"] not in {"done", "error"}:
        frames.append(await comm.receive_json_from(timeout=60))
    while not await comm.receive_nothing(timeout=quiet_s):
        frames.append(await comm.receive_json_from(timeout=5))
    return frames


async def run_turn_with(
    pair: tuple[Any, Session], monkeypatch: pytest.MonkeyPatch, lose: set[str]
) -> tuple[list[dict[str, Any]], LosingLayer]:
    user, session = pair
    layer = LosingLayer(get_channel_layer(), lose)
    monkeypatch.setattr(consumers, "get_channel_layer", lambda: layer)
    comm = WebsocketCommunicator(APP, f"/ws/sessions/{session.pk}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
    assert (await comm.connect(timeout=30))[0]  # a busy machine
    try:
        await comm.send_json_to({"text": "Hallo Nova, wie geht es dir heute?"})
        frames = await frames_of_turn(comm, GRACE_S * 3)
    finally:
        await comm.disconnect()
    return frames, layer


async def test_a_lost_done_reaches_the_person_directly_and_once(
    pair: tuple[Any, Session], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="conversation.consumers")
    frames, layer = await run_turn_with(pair, monkeypatch, {"chat.done"})
    assert layer.lost == ["chat.done"]
    dones = [f for f in frames if f["type"] == "done"]
    assert len(dones) == 1, frames
    stored = await sync_to_async(
        lambda: list(
            Turn.objects.filter(session=pair[1], role=Turn.Role.ASSISTANT).values_list("text")
        )
    )()
    await sync_to_async(connections.close_all)()
    assert [(dones[0]["reply"],)] == stored  # the whole stored reply, once
    assert dones[0]["reply"].strip()
    assert "seq" not in dones[0]  # internal numbering stays inside the server
    steps = [getattr(r, "step", None) for r in caplog.records]
    assert "kanal_nachricht_verloren" in steps


async def test_a_delivered_done_is_not_sent_a_second_time(
    pair: tuple[Any, Session], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="conversation.consumers")
    frames, layer = await run_turn_with(pair, monkeypatch, set())
    assert layer.lost == []
    # Quiet for 3 × the grace after the end: the watchdog had its time and sent nothing.
    assert [f["type"] for f in frames].count("done") == 1, frames
    assert frames[0]["type"] == "start"
    steps = [getattr(r, "step", None) for r in caplog.records]
    assert "kanal_nachricht_verloren" not in steps
    await sync_to_async(connections.close_all)()
