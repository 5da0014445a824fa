"""A message sent while Redis stalls longer than the channel layer waits is not lost silently:
the person reads that it could not be processed, the log names the outcome, no turn is stored.

The stall is a real one (``CLIENT PAUSE`` on the test's Redis). The layer's timeouts are
shortened for this test so that it takes seconds, not the production 15 s."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from channels_redis.core import RedisChannelLayer  # type: ignore[import-untyped]
from django.conf import settings as django_settings
from django.db import connections

from conversation.consumers import NOT_PROCESSED
from conversation.models import Character, Session, Turn
from conversation.routing import websocket_urlpatterns
from tests.factories import SessionFactory, UserFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

APP = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
SOCKET_TIMEOUT_S = 3.0
STALL_S = 6


@pytest.fixture
def short_layer(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from channels.layers import channel_layers

    layers = json.loads(json.dumps(django_settings.CHANNEL_LAYERS))
    layers["default"]["CONFIG"]["hosts"][0]["socket_timeout"] = SOCKET_TIMEOUT_S
    settings.CHANNEL_LAYERS = layers
    # The idle blocking pop stays shorter than the socket timeout, as in production.
    monkeypatch.setattr(RedisChannelLayer, "brpop_timeout", 1)
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def pair() -> tuple[Any, Session]:
    nova = Character.objects.get(name="Nova")
    user = UserFactory.create(username="anna")
    return user, SessionFactory.create(user=user, character=nova)


@pytest.mark.slow
async def test_a_message_during_a_long_redis_stall_is_answered_with_a_german_error(
    short_layer: None, pair: tuple[Any, Session], caplog: pytest.LogCaptureFixture
) -> None:
    user, session = pair
    comm = WebsocketCommunicator(APP, f"/ws/sessions/{session.pk}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]  # AuthMiddleware's key
    assert (await comm.connect())[0]
    admin = redis.Redis.from_url(django_settings.REDIS_URL)
    caplog.set_level(logging.WARNING, logger="conversation.consumers")
    try:
        admin.execute_command("CLIENT", "PAUSE", STALL_S * 1000, "ALL")
        await comm.send_json_to({"text": "Hallo, hörst du mich?"})
        event = await comm.receive_json_from(timeout=STALL_S + 4)
    finally:
        admin.close()
        # The layer's own receive loop ran into the stall as well; its end is not this test's.
        with contextlib.suppress(Exception):
            await comm.disconnect()
    assert event == {"type": "error", "text": NOT_PROCESSED}
    steps = [getattr(r, "step", None) for r in caplog.records]
    assert "kanal_nicht_erreichbar" in steps
    stored = await sync_to_async(Turn.objects.filter(session=session).count)()
    # Queries from here ran in asgiref's one thread: close its connection, or the test
    # database cannot be dropped at the end of the run.
    await sync_to_async(connections.close_all)()
    assert stored == 0
