"""The chat WebSocket: the reply streams token by token through the Redis channel layer.

Nothing blocking runs on the event loop: the turn (DB and model calls) runs in a worker thread,
and its tokens hop back through the channel layer, so "start", the tokens and "done" of one turn
arrive in order on the same FIFO channel. Turns of one socket run one after another (an
asyncio lock); turns of two tabs in one session are ordered by run_turn's session lock.

Frames from the client: ``{"text": "..."}`` sends a message; ``{"type": "stop"}`` stops the
running turn (the Stop button): its model call is cancelled upstream, the later nodes do not
run, and its ``done`` frame comes with ``status: "abgebrochen"``, ``step: "stopp"`` and the
reply as far as it was said. A closed socket stops its turns the same way
(``verbindung_getrennt``). Frames to the client: ``start``, ``token``, ``done``, ``error``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from asgiref.sync import async_to_sync, sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.models import User

from conversation import address, rendering, selectors
from conversation.models import Session
from conversation.pipeline import TurnResult, run_turn
from conversation.pipeline.state import STOP_DISCONNECTED, STOP_PERSON, TurnCancel

logger = logging.getLogger(__name__)

NOT_TEXT = "Ich verstehe nur Textnachrichten – bitte schick deine Nachricht als Text."
NOT_JSON = "Diese Nachricht konnte ich nicht lesen: Sie ist kein gültiges JSON."
NOT_PROCESSED = (
    "Deine Nachricht konnte gerade nicht verarbeitet werden, weil der Nachrichtendienst nicht "
    "antwortet. Bitte schick sie gleich noch einmal."
)
# The same texts for a person whose rules demand "Sie" (conversation.address).
NOT_TEXT_SIE = "Ich verstehe nur Textnachrichten – bitte schicken Sie Ihre Nachricht als Text."
NOT_PROCESSED_SIE = (
    "Ihre Nachricht konnte gerade nicht verarbeitet werden, weil der Nachrichtendienst nicht "
    "antwortet. Bitte schicken Sie sie gleich noch einmal."
)
FAILED_TEXT = "Entschuldige, da ist etwas schiefgegangen."
FAILED_TEXT_SIE = "Entschuldigung, da ist etwas schiefgegangen."

# How long the end of a turn may take through the channel layer before it goes straight to the
# socket. channels_redis can lose a message meant for one consumer when another consumer of the
# same process is cancelled while its blocking pop holds the message (a disconnect at the wrong
# moment; channels_redis #366): without this the person would wait for a "done" forever.
DONE_GRACE_S = 3.0


@cache
def turn_executor() -> ThreadPoolExecutor:
    """The threads the turns of this web process run in. asyncio's default pool has
    min(32, cores + 4) threads — 6 on two cores — and a turn spends most of its time waiting
    for the model, so with more sockets than that the others queued for a thread, not for the
    model. Each thread holds one database connection while it runs a turn."""
    return ThreadPoolExecutor(max_workers=settings.TURN_THREADS, thread_name_prefix="novaberg-turn")


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        user = self.scope.get("user")
        if not isinstance(user, User) or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.user: User = user
        session_id = int(self.scope["url_route"]["kwargs"]["session_id"])
        session = await sync_to_async(selectors.session_get)(user=user, session_id=session_id)
        if session is None:
            await self.close(code=4404)
            return
        self.session: Session = session
        self.turn_lock: asyncio.Lock = asyncio.Lock()
        self.tasks: set[asyncio.Task[None]] = set()
        # Every turn of this socket not finished yet, in the order they were sent: the first
        # is the one running (the turn lock is FIFO) and Stop ends it; a closed socket ends
        # them all.
        self.unfinished: list[TurnCancel] = []
        # Turns of this socket are numbered; every layer event carries its number, so a turn's
        # end is delivered once (by the layer or, when the layer lost it, directly) and its
        # tokens that arrive after it are dropped.
        self.turn_seq: int = 0
        self.delivered: set[tuple[str, int]] = set()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        # The person is gone: nobody reads the reply, so its model calls stop now instead of
        # generating into the void; the turn is stored as far as it got (abgebrochen).
        for cancel in list(getattr(self, "unfinished", ())):
            cancel.stop(STOP_DISCONNECTED)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        # Channels' JSON consumer raises on a binary frame or on text that is not JSON, which
        # closed the socket with 1011; the person (or a script) gets a sentence instead.
        if text_data is None:
            logger.info("websocket frame refused", extra={"outcome": "fehler", "step": "binaer"})
            await self.send_json({"type": "error", "text": await self._say(NOT_TEXT, NOT_TEXT_SIE)})
            return
        try:
            content = await self.decode_json(text_data)
        except ValueError:
            logger.info("websocket frame refused", extra={"outcome": "fehler", "step": "kein_json"})
            await self.send_json({"type": "error", "text": NOT_JSON})
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "stop":
            self._stop()
            return
        text = content.get("text") if isinstance(content, dict) else None
        if not isinstance(text, str):
            await self.send_json({"type": "error", "text": "Nachricht ohne Text."})
            return
        # The turn runs as its own task so that this consumer keeps dispatching the token
        # messages that arrive through the channel layer while the turn is still running.
        cancel = TurnCancel()
        self.unfinished.append(cancel)
        task = asyncio.ensure_future(
            self._turn(text, get_channel_layer(), self.channel_name, cancel)
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        task.add_done_callback(lambda _: self.unfinished.remove(cancel))

    def _stop(self) -> None:
        """The Stop button: ends the turn now running (or about to run), not the messages
        sent after it. A stop with no turn left (it crossed the turn's "done" on the wire) has
        nothing to stop; the log says so."""
        if not self.unfinished:
            logger.info(
                "websocket stop without a running turn",
                extra={"outcome": "ohne_wirkung", "step": "kein_laufender_zug"},
            )
            return
        logger.info("websocket stop", extra={"outcome": "abgebrochen", "step": STOP_PERSON})
        self.unfinished[0].stop(STOP_PERSON)

    async def _turn(self, text: str, layer: Any, channel: str, cancel: TurnCancel) -> None:
        self.turn_seq += 1
        seq = self.turn_seq
        sender = TokenSender(layer, channel, seq)
        async with self.turn_lock:
            await self._turn_locked(text, layer, channel, sender, cancel, seq)

    async def _turn_locked(
        self,
        text: str,
        layer: Any,
        channel: str,
        sender: TokenSender,
        cancel: TurnCancel,
        seq: int,
    ) -> None:
        try:
            # Sent before the turn starts: while Redis does not take it, no turn is run
            # and stored that the person would never see.
            await layer.send(channel, {"type": "chat.start", "seq": seq})
        except Exception:
            logger.warning(
                "websocket turn not started: the channel layer refused the message",
                extra={"outcome": "fehler", "step": "kanal_nicht_erreichbar"},
                exc_info=True,
            )
            text = await self._say(NOT_PROCESSED, NOT_PROCESSED_SIE)
            await self._send_direct({"type": "error", "text": text})
            return
        try:
            result = await sync_to_async(_run, thread_sensitive=False, executor=turn_executor())(
                self.user, self.session, text, sender, cancel
            )
        except Exception:
            logger.exception("websocket turn crashed", extra={"outcome": "fehler", "step": "turn"})
            await self._send_via_layer(layer, channel, {"type": "chat.failed", "seq": seq})
            return
        # Through the layer too, so "done" arrives after the last token (same FIFO channel).
        await self._send_via_layer(
            layer,
            channel,
            {
                "type": "chat.done",
                "seq": seq,
                "turn_id": result.turn_id,
                "status": result.status,
                "step": result.step,
                "reply": result.reply,
                # Additive: the reply as sanitised HTML for the chat page (rendering.py).
                "reply_html": rendering.reply_html(result.reply),
                "question": result.question,
                "records": result.records,
                "ttft_ms": result.ttft_ms,
                "total_ms": result.total_ms,
            },
        )
        if result.note:
            # The tribunal's note under the reply it judged (seed 000 §8.3), after "done".
            note = {"type": "chat.note", "seq": seq, "turn_id": result.turn_id, **result.note}
            await self._send_via_layer(layer, channel, note)

    def _handler(self, event: dict[str, Any]) -> Any:
        handlers = {"chat.done": self.chat_done, "chat.note": self.chat_note}
        return handlers.get(event["type"], self.chat_failed)

    async def _send_via_layer(self, layer: Any, channel: str, event: dict[str, Any]) -> None:
        """The end of a turn that already ran: when the layer does not take it, or takes it and
        does not deliver it within DONE_GRACE_S, the event goes straight to the socket (its
        tokens may be missing; "done" carries the whole reply). Delivered once either way."""
        try:
            await layer.send(channel, event)
        except Exception:
            logger.warning(
                "websocket turn end sent past the channel layer",
                extra={"outcome": "fehler", "step": "kanal_nicht_erreichbar"},
                exc_info=True,
            )
            await self._handler(event)(event)
            return
        task = asyncio.ensure_future(self._deliver_if_lost(event))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _deliver_if_lost(self, event: dict[str, Any]) -> None:
        await asyncio.sleep(DONE_GRACE_S)
        if (event["type"], event["seq"]) in self.delivered:
            return
        logger.warning(
            "websocket turn end not delivered by the channel layer; sent directly",
            extra={"outcome": "fehler", "step": "kanal_nachricht_verloren"},
        )
        try:
            await self._handler(event)(event)
        except Exception:
            # The socket is gone as well: nobody is left to tell; the turn is stored.
            logger.info("websocket gone before the turn end could be sent", exc_info=True)

    def _first_delivery(self, event: dict[str, Any]) -> bool:
        """True the first time this turn's event of this type reaches the socket."""
        key = (event["type"], event.get("seq", 0))
        if key in self.delivered:
            logger.info(
                "websocket turn end arrived twice; the second is dropped",
                extra={"outcome": "doppelt_verworfen", "step": event["type"]},
            )
            return False
        self.delivered.add(key)
        return True

    @staticmethod
    def _frame(event: dict[str, Any], kind: str) -> dict[str, Any]:
        frame = {k: v for k, v in event.items() if k != "seq"}
        frame["type"] = kind
        return frame

    async def _send_direct(self, event: dict[str, Any]) -> None:
        try:
            await self.send_json(event)
        except Exception:
            # The socket is gone too; the log line above already names the outcome.
            logger.info("websocket gone before the error could be sent", exc_info=True)

    async def chat_start(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "start"})

    async def chat_done(self, event: dict[str, Any]) -> None:
        if self._first_delivery(event):
            await self.send_json(self._frame(event, "done"))

    async def chat_failed(self, event: dict[str, Any]) -> None:
        if not self._first_delivery({**event, "type": "chat.failed"}):
            return
        text = await self._say(FAILED_TEXT, FAILED_TEXT_SIE)
        await self.send_json({"type": "error", "text": text})

    async def chat_note(self, event: dict[str, Any]) -> None:
        if self._first_delivery(event):
            await self.send_json(self._frame(event, "note"))

    async def _say(self, du: str, sie: str) -> str:
        """A fixed text in the form of address the person's rules demand (a DB read)."""
        try:
            return await sync_to_async(address.say)(du, sie, user=self.user)
        except Exception:
            logger.warning("form of address unknown; du-text sent", exc_info=True)
            return du

    async def chat_token(self, event: dict[str, Any]) -> None:
        # A token that comes after its turn's end was delivered directly is dropped: the
        # "done" frame already carried the whole reply.
        seq = event.get("seq", 0)
        if ("chat.done", seq) in self.delivered or ("chat.failed", seq) in self.delivered:
            return
        await self.send_json({"type": "token", "text": event["text"]})


class TokenSender:
    """Called in the worker thread for every token: hops through the channel layer back to the
    socket, coalescing tokens that come faster than ``FLUSH_S`` (fewer layer messages, so a busy
    server does not fill the channel). A failed send (socket gone, channel full) never breaks the
    turn: it finishes and is stored; the client reloads it."""

    FLUSH_S = 0.03

    def __init__(self, layer: Any, channel: str, seq: int = 0) -> None:
        self.layer = layer
        self.channel = channel
        self.seq = seq
        self.buffer: list[str] = []
        self.last = 0.0
        self.broken = False
        self.lock = threading.Lock()
        # A held token is sent at the latest FLUSH_S later, even when no token follows it (a
        # model that pauses, or the tribunal running after the last words).
        self.timer: threading.Timer | None = None

    def __call__(self, token: str) -> None:
        with self.lock:
            self.buffer.append(token)
            due = time.monotonic() - self.last >= self.FLUSH_S
            if not due and self.timer is None:
                self.timer = threading.Timer(self.FLUSH_S, self.flush)
                self.timer.daemon = True
                self.timer.start()
        if due:
            self.flush()

    def flush(self) -> None:
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if not self.buffer or self.broken:
                return
            text, self.buffer = "".join(self.buffer), []
            self.last = time.monotonic()
            try:
                event = {"type": "chat.token", "seq": self.seq, "text": text}
                async_to_sync(self.layer.send)(self.channel, event)
            except Exception:
                self.broken = True
                logger.warning("token could not be sent; the turn goes on", exc_info=True)


def _run(
    user: User, session: Session, text: str, sender: TokenSender, cancel: TurnCancel
) -> TurnResult:
    from django.db import close_old_connections, connections

    close_old_connections()
    try:
        return run_turn(
            user=user,
            character=session.character,
            session=session,
            text=text,
            on_token=sender,
            cancel=cancel,
        )
    finally:
        sender.flush()
        # The pool's threads live as long as the process: a connection left open here would
        # stay open between turns (and keep a test database from being dropped).
        connections.close_all()
