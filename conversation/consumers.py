"""The chat WebSocket: the reply streams token by token, in this process, straight to the socket.

Nothing blocking runs on the event loop: the turn (DB and model calls) runs in a worker thread
of ``turn_executor()``, and its tokens hop back to the event loop through an ``asyncio.Queue``
that one pump per turn drains into the socket, so "start", the tokens and "done" of one turn
arrive in order. Turns of one socket run one after another (an asyncio lock); turns of two tabs
in one session are ordered by run_turn's session lock.

No channel layer (DESIGN.md: the chat does not route its own tokens through Redis). Through
Redis, a stall longer than the layer's socket timeout closed quiet sockets with 1011 (the
layer's blocking pop failed inside the consumer's receive loop), and a turn's end could be
lost on the way (channels_redis #366); a socket now lives and answers whatever Redis does.

Frames from the client: ``{"text": "..."}`` sends a message; ``{"type": "stop"}`` stops the
running turn (the Stop button): its model call is cancelled upstream, the later nodes do not
run, and its ``done`` frame comes with ``status: "abgebrochen"``, ``step: "stopp"`` and the
reply as far as it was said. A closed socket stops its turns the same way
(``verbindung_getrennt``). Frames to the client: ``start``, ``token``, ``done``, ``note``,
``error``. A frame that is not JSON, nested deeper than ``novaberg.parsers.MAX_DEPTH`` or
holding a lone surrogate is answered with an ``error`` frame; the socket stays open.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.contrib.auth.models import User

from conversation import address, rendering, selectors
from conversation.models import Session
from conversation.pipeline import TurnResult, run_turn
from conversation.pipeline.state import STOP_DISCONNECTED, STOP_PERSON, TurnCancel
from novaberg import parsers

logger = logging.getLogger(__name__)

NOT_TEXT = "Ich verstehe nur Textnachrichten – bitte schick deine Nachricht als Text."
NOT_JSON = "Diese Nachricht konnte ich nicht lesen: Sie ist kein gültiges JSON."
# The same texts for a person whose rules demand "Sie" (conversation.address).
NOT_TEXT_SIE = "Ich verstehe nur Textnachrichten – bitte schicken Sie Ihre Nachricht als Text."
FAILED_TEXT = "Entschuldige, da ist etwas schiefgegangen."
FAILED_TEXT_SIE = "Entschuldigung, da ist etwas schiefgegangen."

# Not a configured alias: Channels gives this consumer no channel layer (see the module).
NO_CHANNEL_LAYER = "none"


@cache
def turn_executor() -> ThreadPoolExecutor:
    """The threads the turns of this web process run in. asyncio's default pool has
    min(32, cores + 4) threads — 6 on two cores — and a turn spends most of its time waiting
    for the model, so with more sockets than that the others queued for a thread, not for the
    model. Each thread holds one database connection while it runs a turn."""
    return ThreadPoolExecutor(max_workers=settings.TURN_THREADS, thread_name_prefix="novaberg-turn")


class ChatConsumer(AsyncJsonWebsocketConsumer):
    channel_layer_alias = NO_CHANNEL_LAYER

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
            # Depth counted before json recurses (a frame nested 3,000 deep raised
            # RecursionError: close 1011); a lone surrogate could not be stored as a turn.
            content = parsers.loads_checked(text_data)
        except parsers.JsonRefused as exc:
            logger.info("websocket frame refused", extra={"outcome": "fehler", "step": exc.step})
            await self.send_json({"type": "error", "text": exc.message})
            return
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
        # The turn runs as its own task so that this consumer keeps reading frames (a Stop)
        # while the turn is still running.
        cancel = TurnCancel()
        self.unfinished.append(cancel)
        task = asyncio.ensure_future(self._turn(text, cancel))
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

    async def _turn(self, text: str, cancel: TurnCancel) -> None:
        async with self.turn_lock:
            await self._turn_locked(text, cancel)

    async def _turn_locked(self, text: str, cancel: TurnCancel) -> None:
        loop = asyncio.get_running_loop()
        frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def emit(chunk: str) -> None:  # in the turn's thread (or the sender's flush timer)
            loop.call_soon_threadsafe(frames.put_nowait, {"type": "token", "text": chunk})

        sender = TokenSender(emit)
        await self._send_direct({"type": "start"})
        pump = asyncio.ensure_future(self._pump(frames))
        try:
            result = await sync_to_async(_run, thread_sensitive=False, executor=turn_executor())(
                self.user, self.session, text, sender, cancel
            )
        except Exception:
            logger.exception("websocket turn crashed", extra={"outcome": "fehler", "step": "turn"})
            result = None
        # The thread's last tokens were queued before its end was: they go out first, then
        # the turn's end ("done" after the last token).
        frames.put_nowait(None)
        await pump
        if result is None:
            failed = await self._say(FAILED_TEXT, FAILED_TEXT_SIE)
            await self._send_direct({"type": "error", "text": failed})
            return
        await self._send_direct(
            {
                "type": "done",
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
            }
        )
        if result.note:
            # The tribunal's note under the reply it judged (seed 000 §8.3), after "done".
            await self._send_direct({"type": "note", "turn_id": result.turn_id, **result.note})

    async def _pump(self, frames: asyncio.Queue[dict[str, Any] | None]) -> None:
        """Sends a turn's token frames in the order they were said, until the turn's end."""
        while (frame := await frames.get()) is not None:
            await self._send_direct(frame)

    async def _send_direct(self, event: dict[str, Any]) -> None:
        try:
            await self.send_json(event)
        except Exception:
            # The socket is gone: nobody is left to tell; the turn is stored as far as it got.
            logger.info("websocket gone before a frame could be sent", exc_info=True)

    async def _say(self, du: str, sie: str) -> str:
        """A fixed text in the form of address the person's rules demand (a DB read)."""
        try:
            return await sync_to_async(address.say)(du, sie, user=self.user)
        except Exception:
            logger.warning("form of address unknown; du-text sent", exc_info=True)
            return du


class TokenSender:
    """Called in the worker thread for every token: hands the text to ``emit`` (which queues it
    for the socket), coalescing tokens that come faster than ``FLUSH_S`` (fewer frames for a
    fast model). A failed hand-over (the socket's loop gone) never breaks the turn: it finishes
    and is stored; the client reloads it."""

    FLUSH_S = 0.03

    def __init__(self, emit: Callable[[str], None]) -> None:
        self.emit = emit
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
        # Emitted under the lock: when the turn's last flush returns, every earlier text has
        # been handed over (a timer's flush included), so "done" cannot overtake a token.
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None
            if not self.buffer or self.broken:
                return
            text, self.buffer = "".join(self.buffer), []
            self.last = time.monotonic()
            try:
                self.emit(text)
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
