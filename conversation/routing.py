from __future__ import annotations

import logging

from django.urls import path

from conversation import consumers
from novaberg import embeddings

logger = logging.getLogger(__name__)

websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", consumers.ChatConsumer.as_asgi()),
]


def _warm_up() -> None:
    """Load the embedding model while the ASGI app starts (this module is imported then).

    Loaded lazily inside the first turn, it holds the GIL for seconds in a worker thread; the
    event loop's Redis reads of the channel layer then time out and every open socket drops.
    """
    try:
        embeddings.warm_up()
    except embeddings.EmbeddingError as exc:
        # The chat still runs without memory/records; the enricher names the failure per turn.
        logger.warning("embedding model not loaded at start: %s", exc)


_warm_up()
