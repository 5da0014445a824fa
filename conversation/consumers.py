"""The chat WebSocket: the reply streams token by token through the Redis channel layer."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer

from conversation import selectors
from conversation.pipeline import run_turn

logger = logging.getLogger(__name__)


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        session = await sync_to_async(selectors.session_get)(user=user, session_id=session_id)
        if session is None:
            await self.close(code=4404)
            return
        self.session = session
        await self.accept()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        text = content.get("text") if isinstance(content, dict) else None
        if not isinstance(text, str):
            await self.send_json({"type": "error", "text": "Nachricht ohne Text."})
            return
        layer = get_channel_layer()
        channel = self.channel_name
        await self.send_json({"type": "start"})
        # The turn runs as its own task so that this consumer keeps dispatching the token
        # messages that arrive through the channel layer while the turn is still running.
        asyncio.ensure_future(self._turn(text, layer, channel))

    async def _turn(self, text: str, layer: Any, channel: str) -> None:
        def on_token(token: str) -> None:
            # Runs in the worker thread: hop through the channel layer back to this socket.
            async_to_sync(layer.send)(channel, {"type": "chat.token", "text": token})

        try:
            result = await sync_to_async(_run, thread_sensitive=False)(
                self.scope["user"], self.session, text, on_token
            )
        except Exception:
            logger.exception("websocket turn crashed")
            await layer.send(channel, {"type": "chat.failed"})
            return
        # Through the layer too, so "done" arrives after the last token (same FIFO channel).
        await layer.send(
            channel,
            {
                "type": "chat.done",
                "turn_id": result.turn_id,
                "status": result.status,
                "reply": result.reply,
                "question": result.question,
                "records": result.records,
                "ttft_ms": result.ttft_ms,
                "total_ms": result.total_ms,
            },
        )

    async def chat_done(self, event: dict[str, Any]) -> None:
        await self.send_json({**event, "type": "done"})

    async def chat_failed(self, event: dict[str, Any]) -> None:
        await self.send_json(
            {"type": "error", "text": "Entschuldige, da ist etwas schiefgegangen."}
        )

    async def chat_token(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "token", "text": event["text"]})


def _run(user: Any, session: Any, text: str, on_token: Any) -> Any:
    from django.db import close_old_connections

    close_old_connections()
    try:
        return run_turn(
            user=user, character=session.character, session=session, text=text, on_token=on_token
        )
    finally:
        close_old_connections()
