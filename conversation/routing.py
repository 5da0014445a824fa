"""WebSocket routes. Importing this module loads nothing: the embedding model is loaded on its
first use (``make run``'s launcher asks /healthz once daphne listens, which loads it before anyone
chats: loaded inside a first turn it would hold the GIL for seconds while the event loop serves
the open sockets)."""

from __future__ import annotations

from django.urls import path

from conversation import consumers

websocket_urlpatterns = [
    # channels' stubs type path() for Django views only; an ASGI app is what Channels routes.
    path(
        "ws/sessions/<int:session_id>/",
        consumers.ChatConsumer.as_asgi(),  # type: ignore[arg-type]
    ),
]
