"""Fixtures the WebSocket tests of this folder share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conversation.models import Character, Session
from tests.factories import SessionFactory, UserFactory


@pytest.fixture
def fresh_channel_layer() -> Iterator[None]:
    """Each async test has its own event loop, and the Redis layer's locks belong to one loop:
    the layer is made anew for the test and dropped after it."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def pair() -> tuple[Any, Session]:
    """A person and a session of theirs with Nova. transactional_db flushes the data
    migration's Nova row between tests, so she is made again where she is missing."""
    nova, _ = Character.objects.get_or_create(
        name="Nova", defaults={"identity": "Eine neugierige, warme Begleiterin."}
    )
    user = UserFactory.create(username="anna")
    return user, SessionFactory.create(user=user, character=nova)
