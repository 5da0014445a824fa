"""The chat-model gateway: the only module that talks to a chat provider.

Two backends share one interface (`Gateway`):

- `OpenAIBackend` talks to any OpenAI-compatible endpoint through the official `openai` client.
  Every failure (timeout, refused connection, HTTP error, unreadable body, broken stream) becomes
  a value with a named step; nothing raises to the caller.
- `OfflineBackend` is the deterministic stand-in used when no model is configured
  (`settings.LLM_BASE_URL == ""`). Each `purpose` is answered by a handler that an app registers
  with `register_offline()` from its `AppConfig.ready()`.

Callers never parse JSON here: `json_mode` only asks the server for a JSON object; the answer is
read by the caller's own checked reader.

Budgets (DESIGN.md "Language model calls"): every call is bounded by the `Budget` of its purpose
(`BUDGETS`): `max_tokens` (a caller's own value is capped by it), a stop where the format allows
one, and a deadline for the whole call (capped by `settings.LLM_TOTAL_S`); a stream also has a
deadline for its first token (`settings.LLM_FIRST_TOKEN_S`). Retries happen here, and only for
failures before generation (refused connection, connect timeout, 429/5xx answered instead of
tokens); a read timeout of a generation is never retried. A stream can be cancelled by the
consumer (`stream(..., cancel=event)`), which closes the upstream HTTP connection. A turn sets
one cancel signal for every call it makes (`cancel_scope`): Stop, a disconnect or the turn's
deadline then ends the running call, streamed or not, without each call site passing it.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.conf import settings

from novaberg import llm_state

logger = logging.getLogger("novaberg.llm")

OfflineHandler = Callable[[list[dict[str, str]], dict], str]

# Named failure steps (see LLMFailure.step).
STEP_TIMEOUT = "zeitueberschreitung"
STEP_CONNECTION = "verbindung"
STEP_HTTP = "http_fehler"
STEP_UNREADABLE = "antwort_unlesbar"
STEP_STREAM_BROKEN = "abbruch_im_stream"
STEP_NO_HANDLER = "offline_kein_handler"
STEP_FIRST_TOKEN = "zeitlimit_erstes_token"  # the stream's first token did not come in time
STEP_DEADLINE = "zeitlimit_antwort"  # the whole call ran past its purpose's deadline
STEP_CANCELLED = "abgebrochen"  # the consumer cancelled the stream (Stop, disconnect)
# A deadline or the silence limit ended the call (with no token before it: no answer at all).
TIMEOUT_STEPS = frozenset({STEP_TIMEOUT, STEP_FIRST_TOKEN, STEP_DEADLINE})

CancelSignal = threading.Event | Callable[[], bool]


@dataclass(frozen=True)
class Budget:
    """What one call of a purpose may spend. `stop` only where the output format allows one:
    never for JSON (a stop sequence is cut from the text and would break the object)."""

    max_tokens: int
    deadline_s: float
    stop: tuple[str, ...] = ()

    def tokens(self, requested: int | None) -> int:
        return self.max_tokens if requested is None else max(1, min(requested, self.max_tokens))


# A chat reply ends where a base model starts to write the person's next line itself
# (conversation/prompts/blocks.py::history_block labels the person "Nutzer").
_REPLY_STOP = ("\nNutzer:",)

# purpose -> budget. The purposes are the `purpose=` of the call sites; keep both in step.
BUDGETS: dict[str, Budget] = {
    # classification and verdicts: a short JSON object
    "router.classify": Budget(max_tokens=48, deadline_s=15.0),
    "directives.classify": Budget(max_tokens=200, deadline_s=20.0),
    "directives.tribunal": Budget(max_tokens=160, deadline_s=20.0),
    # JSON readers
    "conversation_vector": Budget(max_tokens=200, deadline_s=20.0),
    "sachlage_zweifel": Budget(max_tokens=200, deadline_s=20.0),
    "files.enrich": Budget(max_tokens=300, deadline_s=60.0),
    "rueckweg_planer": Budget(max_tokens=400, deadline_s=60.0),
    "wissen_lernen": Budget(max_tokens=600, deadline_s=60.0),
    # the chat reply: content, then Nova's voice
    "composer": Budget(max_tokens=500, deadline_s=45.0, stop=_REPLY_STOP),
    "responder": Budget(max_tokens=600, deadline_s=60.0, stop=_REPLY_STOP),
}
# A purpose nobody budgeted gets a safe default (and a warning, once per purpose).
DEFAULT_BUDGET = Budget(max_tokens=256, deadline_s=30.0)
_budget_logger = logging.getLogger("novaberg.llm.budget")
_unbudgeted_seen: set[str] = set()


def budget_for(purpose: str) -> Budget:
    budget = BUDGETS.get(purpose)
    if budget is not None:
        return budget
    if purpose not in _unbudgeted_seen:
        _unbudgeted_seen.add(purpose)
        _budget_logger.warning(
            "llm purpose=%s has no budget; default max_tokens=%d deadline_s=%.0f",
            purpose,
            DEFAULT_BUDGET.max_tokens,
            DEFAULT_BUDGET.deadline_s,
            extra={"purpose": purpose},
        )
    return DEFAULT_BUDGET


def _setting(name: str, default: float) -> float:
    return float(getattr(settings, name, default))


# The cancel signal of the turn this thread is running (see `cancel_scope`).
_scope_cancel: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar(
    "novaberg_llm_cancel", default=None
)


def _as_check(cancel: CancelSignal) -> Callable[[], bool]:
    return cancel.is_set if isinstance(cancel, threading.Event) else cancel


@contextmanager
def cancel_scope(cancel: CancelSignal) -> Iterator[None]:
    """Every model call made inside (in this thread's context) also stops when `cancel` fires:
    a stream closes its upstream connection, an unstreamed call returns at once (step
    `abgebrochen`). A call's own `cancel` argument still counts as well."""
    token = _scope_cancel.set(_as_check(cancel))
    try:
        yield
    finally:
        _scope_cancel.reset(token)


def _cancel_signal(cancel: CancelSignal | None) -> Callable[[], bool] | None:
    """The call's own signal and the surrounding turn's, as one check; None when neither."""
    own = None if cancel is None else _as_check(cancel)
    checks = [check for check in (own, _scope_cancel.get()) if check is not None]
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda: any(check() for check in checks)


def _cancel_check(cancel: CancelSignal | None) -> Callable[[], bool]:
    signal = _cancel_signal(cancel)
    return signal if signal is not None else (lambda: False)


@dataclass(frozen=True)
class LLMFailure:
    """Why a call produced no usable answer. `status` is set for `http_fehler` only."""

    step: str
    message: str
    status: int | None = None


@dataclass(frozen=True)
class ChatResult:
    ok: bool
    text: str
    failure: LLMFailure | None
    backend: str
    model: str
    ms: int


@dataclass(frozen=True)
class StreamEvent:
    """One event of a streamed answer: many "token"s, then exactly one "done" or "error"."""

    kind: str  # "token" | "done" | "error"
    text: str = ""
    failure: LLMFailure | None = None


class Gateway(Protocol):
    name: str  # "openai" | "offline"
    model: str

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        json_mode: bool = False,
        hints: dict | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> ChatResult:
        """One unstreamed answer. `cancel` (or the surrounding `cancel_scope`) makes the call
        return at once with step `abgebrochen`; the abandoned request ends at its deadline."""
        ...

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        hints: dict | None = None,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> Iterator[StreamEvent]:
        """Yield tokens, then exactly one "done" or "error".

        `cancel` (an Event or a callable returning True) stops the stream from another thread
        (Stop, a disconnected client): the upstream HTTP connection is closed at once and the
        last event is an "error" with step `abgebrochen`. Stopping the iteration (or calling
        `close()` on the generator from the consuming thread) closes the upstream as well."""
        ...


# A word with the whitespace after it, or leading whitespace on its own: the pieces cover every
# character, so "".join(split_tokens(t)) == t always holds (streaming must not alter the text).
_TOKEN_RE = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> list[str]:
    """Split text into word-ish stream tokens that join back to exactly `text`."""
    return _TOKEN_RE.findall(text)


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _log_call(
    *,
    backend: str,
    model: str,
    purpose: str,
    ms: int,
    outcome: str,
    detail: str,
    answered: bool = True,
) -> None:
    """``answered``: False when the call timed out before the model sent anything (the badge
    then says "nicht erreichbar", not "langsam")."""
    # One line per call; the fields travel in `extra` so a structured formatter can pick them up.
    level = logging.INFO if outcome == "ok" else logging.WARNING
    logger.log(
        level,
        "llm %s purpose=%s outcome=%s ms=%d %s",
        backend,
        purpose,
        outcome,
        ms,
        detail,
        extra={
            "purpose": purpose,
            "ms": ms,
            "outcome": outcome,
            "llm_backend": backend,
            "llm_model": model,
        },
    )
    if backend != "offline":
        # The header badge reads the model's state from the recent outcomes (llm_state.py).
        deadline_s = BUDGETS.get(purpose, DEFAULT_BUDGET).deadline_s
        limit_s = min(deadline_s, _setting("LLM_TOTAL_S", 60.0))
        llm_state.record_call(
            purpose=purpose,
            outcome=outcome,
            ms=ms,
            limit_ms=int(limit_s * 1000),
            answered=answered,
        )


def _cancelled_result(backend: str, model: str, purpose: str, started: float) -> ChatResult:
    ms = _elapsed_ms(started)
    _log_call(
        backend=backend, model=model, purpose=purpose, ms=ms, outcome=STEP_CANCELLED, detail=""
    )
    return ChatResult(
        ok=False,
        text="",
        failure=LLMFailure(STEP_CANCELLED, f"cancelled after {ms} ms"),
        backend=backend,
        model=model,
        ms=ms,
    )


# --------------------------------------------------------------------------------------------
# Offline backend
# --------------------------------------------------------------------------------------------

# Module-level so that apps can register from AppConfig.ready() before any gateway exists, and
# so that a reset_gateway() keeps the registrations.
_offline_handlers: dict[str, OfflineHandler] = {}
_offline_lock = threading.Lock()


def register_offline(purpose: str, handler: OfflineHandler) -> None:
    """Register the deterministic answer for `purpose`; a later registration replaces it."""
    with _offline_lock:
        _offline_handlers[purpose] = handler


def offline_handler(purpose: str) -> OfflineHandler | None:
    with _offline_lock:
        return _offline_handlers.get(purpose)


class OfflineBackend:
    """Deterministic, network-free gateway. Handler exceptions are bugs and do propagate."""

    name = "offline"
    model = "offline"

    def _answer(
        self, messages: list[dict[str, str]], purpose: str, hints: dict | None
    ) -> tuple[str | None, LLMFailure | None]:
        handler = offline_handler(purpose)
        if handler is None:
            return None, LLMFailure(STEP_NO_HANDLER, f"no offline handler for purpose {purpose!r}")
        text = handler(messages, dict(hints or {}))
        if not isinstance(text, str):
            raise TypeError(f"offline handler for {purpose!r} returned {type(text).__name__}")
        return text, None

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        json_mode: bool = False,
        hints: dict | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> ChatResult:
        # `cancel` is accepted for the interface; an offline answer is instant, and a node's
        # offline fallback must still answer inside a cancelled turn.
        started = time.perf_counter()
        text, failure = self._answer(messages, purpose, hints)
        ms = _elapsed_ms(started)
        outcome = "ok" if failure is None else failure.step
        _log_call(
            backend=self.name, model=self.model, purpose=purpose, ms=ms, outcome=outcome, detail=""
        )
        return ChatResult(
            ok=failure is None,
            text=text or "",
            failure=failure,
            backend=self.name,
            model=self.model,
            ms=ms,
        )

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        hints: dict | None = None,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> Iterator[StreamEvent]:
        started = time.perf_counter()
        cancelled = _cancel_check(cancel)
        text, failure = self._answer(messages, purpose, hints)
        _log_call(
            backend=self.name,
            model=self.model,
            purpose=purpose,
            ms=_elapsed_ms(started),
            outcome="ok" if failure is None else failure.step,
            detail="stream",
        )
        if failure is not None:
            yield StreamEvent("error", failure=failure)
            return
        for token in split_tokens(text or ""):
            if cancelled():
                yield StreamEvent("error", failure=LLMFailure(STEP_CANCELLED, "cancelled"))
                return
            yield StreamEvent("token", text=token)
        yield StreamEvent("done")


# --------------------------------------------------------------------------------------------
# OpenAI-compatible backend
# --------------------------------------------------------------------------------------------


def _cause_name(exc: BaseException) -> str:
    return type(exc.__cause__).__name__ if exc.__cause__ is not None else ""


def _failure_from_exception(exc: BaseException, *, read_limit: str = STEP_TIMEOUT) -> LLMFailure:
    """Map an exception raised by the openai client (or while reading its answer) to a step.

    `read_limit` names a read timeout: the plain silence limit (`zeitueberschreitung`) or the
    deadline that bounded this read (`zeitlimit_erstes_token`, `zeitlimit_antwort`)."""
    import openai

    # Order matters: APITimeoutError is a subclass of APIConnectionError.
    # The client's own messages ("Connection error.") hide the cause; the log needs it.
    cause = f" ({type(exc.__cause__).__name__}: {exc.__cause__})" if exc.__cause__ else ""
    if isinstance(exc, openai.APITimeoutError):
        if _cause_name(exc) in _CONNECT_TIMEOUTS:
            return LLMFailure(STEP_CONNECTION, f"connect timed out{cause}"[:500])
        return LLMFailure(read_limit, f"request timed out{cause}"[:500])
    if isinstance(exc, openai.APIConnectionError):
        return LLMFailure(STEP_CONNECTION, f"connection failed{cause}"[:500])
    if isinstance(exc, openai.APIStatusError):
        return LLMFailure(STEP_HTTP, exc.message[:500], status=exc.status_code)
    # APIResponseValidationError, ValueError from json decoding, pydantic validation errors and
    # anything else unexpected: the server answered, but not with something we can read.
    return LLMFailure(STEP_UNREADABLE, f"{type(exc).__name__}: {exc}"[:500])


# The httpx exceptions (by name: the openai client ships its own httpx build) that happen before
# the request reached the server, so the server cannot have started to generate.
_CONNECT_TIMEOUTS = frozenset({"ConnectTimeout", "PoolTimeout"})
_CONNECT_ERRORS = frozenset({"ConnectError"})


def _before_generation(exc: BaseException) -> bool:
    """May this failure be retried? Only if no generation can have started: the connection was
    refused or timed out, or the server answered 429/5xx instead of tokens. A read timeout means
    the model is generating (slowly) and a retry would only double the wait."""
    import openai

    if isinstance(exc, openai.APIStatusError):
        return exc.status_code == 429 or exc.status_code >= 500
    if isinstance(exc, openai.APITimeoutError):
        return _cause_name(exc) in _CONNECT_TIMEOUTS
    if isinstance(exc, openai.APIConnectionError):
        return _cause_name(exc) in _CONNECT_ERRORS
    return False


def _backoff_s(attempt: int) -> float:
    return float(min(0.2 * (3**attempt), 2.0))  # 0.2 s, 0.6 s, 1.8 s, 2 s …


def _host_label(base_url: str) -> str:
    parts = urlsplit(base_url)
    return parts.netloc or base_url


def _shutdown_upstream(chunks: Any) -> None:
    """Close the socket under a running stream from any thread. `shutdown` (not `close`) wakes a
    read blocked in another thread and sends the FIN at once, so the server sees the disconnect
    and can stop generating."""
    response = getattr(chunks, "response", None)
    extensions = getattr(response, "extensions", None)
    network_stream = extensions.get("network_stream") if isinstance(extensions, dict) else None
    sock = network_stream.get_extra_info("socket") if network_stream is not None else None
    if isinstance(sock, socket.socket):
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed


def _close_quietly(chunks: Any) -> None:
    close = getattr(chunks, "close", None)
    if callable(close):
        try:
            close()
        except Exception as exc:  # closing a connection we shut down ourselves
            logger.debug("llm closing a stream failed: %s", exc)


@dataclass
class _Limits:
    """The clock of one call (monotonic seconds)."""

    started: float
    deadline: float  # the whole call
    first_token: float  # streams only; <= deadline

    @classmethod
    def for_budget(cls, budget: Budget, *, stream: bool) -> _Limits:
        now = time.monotonic()
        total = min(budget.deadline_s, _setting("LLM_TOTAL_S", 60.0))
        first = min(total, _setting("LLM_FIRST_TOKEN_S", 20.0)) if stream else total
        return cls(started=now, deadline=now + total, first_token=now + first)

    def timeout(self, *, until: float) -> tuple[Any, str]:
        """An httpx timeout for one attempt that cannot outlast `until`, and the step a read
        timeout then means."""
        import openai

        remaining = max(0.05, until - time.monotonic())
        silence = _setting("LLM_TIMEOUT_S", 60.0)
        connect = min(_setting("LLM_CONNECT_TIMEOUT_S", 5.0), remaining)
        if remaining <= silence:
            step = STEP_FIRST_TOKEN if until < self.deadline else STEP_DEADLINE
        else:
            step = STEP_TIMEOUT
        read = min(silence, remaining)
        return openai.Timeout(connect=connect, read=read, write=read, pool=connect), step


class OpenAIBackend:
    name = "openai"

    def __init__(
        self, *, base_url: str, api_key: str, model: str, timeout_s: float, max_retries: int
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url
        # Local servers (Ollama, llama.cpp) accept any key, but the client refuses an empty one.
        # The client's own retries are off: it would also retry read timeouts of a generation
        # (3 × 60 s per call); `_attempts` retries what is safe to retry.
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=0,
        )

    def ping(self, timeout_s: float) -> bool:
        """Is the endpoint reachable and does it accept our key? One quick GET /models."""
        import openai

        try:
            self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
        except openai.NotFoundError:
            return True  # it answered; some compatible servers simply have no /models
        except Exception as exc:
            logger.warning("llm ping %s failed: %s", self.base_url, _failure_from_exception(exc))
            return False
        return True

    def _create(self, **kwargs: Any) -> Any:
        return self._client.chat.completions.create(model=self.model, **kwargs)

    def _attempts(
        self,
        call: Callable[[Any], Any],
        *,
        limits: _Limits,
        until: float,
        stopped: Callable[[], bool],
        tries: list[str],
    ) -> tuple[Any, str]:
        """Run `call(timeout)` and retry it while the failure happened before generation, the
        retry budget (settings.LLM_MAX_RETRIES) lasts and the deadline allows. Returns the
        result and the step a read timeout of the last attempt means; raises the last error
        with that step in `exc.novaberg_read_limit`."""
        retries = int(getattr(settings, "LLM_MAX_RETRIES", 2))
        attempt = 0
        while True:
            timeout, read_limit = limits.timeout(until=until)
            try:
                return call(timeout), read_limit
            except Exception as exc:
                try:
                    exc.novaberg_read_limit = read_limit  # type: ignore[attr-defined]
                except AttributeError:  # an exception type with __slots__: the plain name then
                    pass
                pause = _backoff_s(attempt)
                if (
                    attempt >= retries
                    or not _before_generation(exc)
                    or stopped()
                    or time.monotonic() + pause >= until
                ):
                    raise
                tries.append(_failure_from_exception(exc).step)
                time.sleep(pause)
                attempt += 1

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        json_mode: bool = False,
        hints: dict | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> ChatResult:
        def call() -> ChatResult:
            return self._chat_now(
                messages,
                purpose=purpose,
                json_mode=json_mode,
                temperature=temperature,
                max_tokens=max_tokens,
            )

        signal = _cancel_signal(cancel)
        if signal is None:
            return call()
        started = time.perf_counter()
        if signal():
            return _cancelled_result(self.name, self.model, purpose, started)
        # The request runs in its own thread so that Stop, a disconnect or the turn's deadline
        # end the wait at once; the abandoned request still ends at its own deadline.
        done = threading.Event()
        box: list[ChatResult | BaseException] = []

        def work() -> None:
            try:
                box.append(call())
            except BaseException as exc:  # handed to the waiting thread, raised there
                box.append(exc)
            finally:
                done.set()

        context = contextvars.copy_context()  # log lines keep the turn's id
        threading.Thread(target=context.run, args=(work,), name="llm-chat", daemon=True).start()
        while not done.wait(0.05):
            if signal():
                return _cancelled_result(self.name, self.model, purpose, started)
        answer = box[0]
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def _chat_now(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        json_mode: bool,
        temperature: float,
        max_tokens: int | None,
    ) -> ChatResult:
        import openai

        started = time.perf_counter()
        budget = budget_for(purpose)
        limits = _Limits.for_budget(budget, stream=False)
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": temperature,
            "max_tokens": budget.tokens(max_tokens),
        }
        if budget.stop and not json_mode:
            kwargs["stop"] = list(budget.stop)
        detail = ""
        tries: list[str] = []
        text = ""
        failure: LLMFailure | None = None

        def call(extra: dict[str, Any]) -> Any:
            return self._attempts(
                lambda timeout: self._create(timeout=timeout, **extra, **kwargs),
                limits=limits,
                until=limits.deadline,
                stopped=lambda: False,
                tries=tries,
            )[0]

        try:
            try:
                response = call({"response_format": {"type": "json_object"}} if json_mode else {})
            except openai.BadRequestError:
                if not json_mode:
                    raise
                # Some OpenAI-compatible servers do not know response_format; the prompt still
                # asks for JSON and the caller's reader checks the answer, so ask once without.
                detail = "json_mode rejected, retried without response_format"
                response = call({})
            text, failure = self._read_completion(response)
        except Exception as exc:  # the contract: a named failure, never an exception
            failure = _failure_from_exception(
                exc, read_limit=getattr(exc, "novaberg_read_limit", STEP_TIMEOUT)
            )
        ms = _elapsed_ms(started)
        if tries:
            detail = f"{detail} retried after {','.join(tries)}".strip()
        detail = f"max_tokens={kwargs['max_tokens']} {detail}".strip()
        _log_call(
            backend=self.name,
            model=self.model,
            purpose=purpose,
            ms=ms,
            outcome="ok" if failure is None else failure.step,
            detail=detail if failure is None else f"{detail} {failure.message}".strip(),
            # Unstreamed, a timeout means no answer at all: nothing arrives before the end.
            answered=failure is None or failure.step not in TIMEOUT_STEPS,
        )
        return ChatResult(
            ok=failure is None,
            text=text if failure is None else "",
            failure=failure,
            backend=self.name,
            model=self.model,
            ms=ms,
        )

    @staticmethod
    def _read_completion(response: Any) -> tuple[str, LLMFailure | None]:
        # A non-JSON body served as text/plain comes back from the client as a bare string.
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            return "", LLMFailure(STEP_UNREADABLE, f"no choices in {type(response).__name__}")
        if not choices:
            return "", LLMFailure(STEP_UNREADABLE, "empty choices")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            return "", LLMFailure(STEP_UNREADABLE, "empty message content")
        return content, None

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        hints: dict | None = None,
        temperature: float = 0.7,
        max_tokens: int | None = None,
        cancel: CancelSignal | None = None,
    ) -> Iterator[StreamEvent]:
        """See `Gateway.stream`. The upstream is read by a pump thread, so the deadlines and
        `cancel` hold even while the server sends nothing at all."""
        started = time.perf_counter()
        budget = budget_for(purpose)
        limits = _Limits.for_budget(budget, stream=True)
        cap = budget.tokens(max_tokens)
        kwargs: dict[str, Any] = {
            "messages": messages,
            "temperature": temperature,
            "max_tokens": cap,
            "stream": True,
        }
        if budget.stop:
            kwargs["stop"] = list(budget.stop)
        signal = _cancel_signal(cancel)
        cancelled = signal if signal is not None else (lambda: False)
        pump = _Pump(self, kwargs, limits, cancelled)
        tokens = 0
        outcome = "abgebrochen_vom_aufrufer"  # if the consumer stops iterating early
        detail = f"stream max_tokens={cap}"
        failure: LLMFailure | None = None
        finished = False
        silent = False  # timed out before the first token
        try:
            pump.start()
            while True:
                now = time.monotonic()
                if cancelled():
                    failure = LLMFailure(STEP_CANCELLED, f"cancelled after {tokens} tokens")
                    break
                limit = limits.deadline if tokens else limits.first_token
                if now >= limit:
                    if tokens:
                        message = f"deadline passed after {tokens} tokens"
                        failure = LLMFailure(STEP_DEADLINE, message)
                    else:
                        message = "no token before the first-token deadline"
                        failure = LLMFailure(STEP_FIRST_TOKEN, message)
                    break
                wait = limit - now
                if signal is not None:
                    wait = min(wait, 0.05)  # poll the cancel signal
                try:
                    kind, payload = pump.events.get(timeout=wait)
                except queue.Empty:
                    continue
                if kind == "open_error":
                    failure = _failure_from_exception(
                        payload, read_limit=getattr(payload, "novaberg_read_limit", STEP_TIMEOUT)
                    )
                    break
                if kind == "error":
                    failure = _failure_from_exception(payload)
                    if failure.step == STEP_CONNECTION:
                        # The response had started, so a dropped connection is a broken stream.
                        failure = LLMFailure(
                            STEP_STREAM_BROKEN, f"after {tokens} tokens: {failure.message}"
                        )
                    break
                if kind == "end":
                    if not finished:
                        # The openai client ends silently when the body ends without [DONE]; a
                        # missing finish_reason is the only trace of a cut-off answer.
                        failure = LLMFailure(
                            STEP_STREAM_BROKEN,
                            f"stream ended without finish_reason after {tokens}",
                        )
                    elif tokens == 0:
                        failure = LLMFailure(STEP_UNREADABLE, "stream finished without any text")
                    break
                if kind != "chunk":
                    continue  # "opened"
                choices = getattr(payload, "choices", None)
                if not isinstance(choices, list):
                    failure = LLMFailure(
                        STEP_UNREADABLE,
                        f"ValueError: stream chunk without choices: {type(payload).__name__}",
                    )
                    break
                if not choices:
                    continue  # usage-only chunks carry no text
                delta = getattr(choices[0], "delta", None)
                content = getattr(delta, "content", None)
                if content:
                    tokens += 1
                    yield StreamEvent("token", text=content)
                if getattr(choices[0], "finish_reason", None) is not None:
                    finished = True
                elif tokens >= cap:
                    # The server ignores max_tokens (one chunk is one token on every server we
                    # know): end it here, as a server that honours it would ("length").
                    detail += " cut_at_max_tokens"
                    break
            if failure is not None:
                outcome, detail = failure.step, f"{detail} tokens={tokens} {failure.message}"
                silent = tokens == 0 and failure.step in TIMEOUT_STEPS
                pump.stop()
                yield StreamEvent("error", failure=failure)
                return
            pump.stop()
            outcome, detail = "ok", f"{detail} tokens={tokens}"
            yield StreamEvent("done")
        finally:
            pump.stop()
            if pump.tries:
                detail = f"{detail} retried after {','.join(pump.tries)}"
            _log_call(
                backend=self.name,
                model=self.model,
                purpose=purpose,
                ms=_elapsed_ms(started),
                outcome=outcome,
                detail=detail,
                answered=not silent,
            )


class _Pump(threading.Thread):
    """Opens the stream (with the retries that are safe) and moves its chunks into `events`:
    ("opened"|"chunk"|"open_error"|"error"|"end", payload). `stop()` from the consumer's thread
    ends it and closes the upstream connection."""

    def __init__(
        self,
        backend: OpenAIBackend,
        kwargs: dict[str, Any],
        limits: _Limits,
        cancelled: Callable[[], bool],
    ) -> None:
        super().__init__(name="llm-stream", daemon=True)
        self.backend = backend
        self.kwargs = kwargs
        self.limits = limits
        self.cancelled = cancelled
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.tries: list[str] = []
        self._stop_requested = threading.Event()
        self._lock = threading.Lock()
        self._chunks: Any = None

    def _stopped(self) -> bool:
        return self._stop_requested.is_set() or self.cancelled()

    def stop(self) -> None:
        with self._lock:
            if self._stop_requested.is_set():
                return
            self._stop_requested.set()
            chunks = self._chunks
        if chunks is not None:
            _shutdown_upstream(chunks)
            # A short join: the pump's blocked read has just been woken by the shutdown.
            if self.is_alive() and threading.current_thread() is not self:
                self.join(timeout=1.0)

    def run(self) -> None:
        try:
            # A server that sends its headers only with the first token is bounded here too.
            chunks, _ = self.backend._attempts(
                lambda timeout: self.backend._create(timeout=timeout, **self.kwargs),
                limits=self.limits,
                until=self.limits.first_token,
                stopped=self._stopped,
                tries=self.tries,
            )
        except Exception as exc:
            self.events.put(("open_error", exc))
            return
        with self._lock:
            self._chunks = chunks
            stopped = self._stop_requested.is_set()
        try:
            if stopped:
                _shutdown_upstream(chunks)
                return
            self.events.put(("opened", None))
            for chunk in chunks:
                if self._stop_requested.is_set():
                    return
                self.events.put(("chunk", chunk))
            self.events.put(("end", None))
        except Exception as exc:
            self.events.put(("error", exc))
        finally:
            _close_quietly(chunks)


# --------------------------------------------------------------------------------------------
# Process-wide gateway
# --------------------------------------------------------------------------------------------

_gateway: Gateway | None = None
_gateway_key: tuple[Any, ...] | None = None
_gateway_lock = threading.Lock()


def _settings_key() -> tuple[Any, ...]:
    return (
        settings.LLM_BASE_URL,
        settings.LLM_API_KEY,
        settings.LLM_MODEL,
        float(getattr(settings, "LLM_TIMEOUT_S", 30.0)),
        int(getattr(settings, "LLM_MAX_RETRIES", 2)),
    )


def get_gateway() -> Gateway:
    """The gateway for this process, built from settings on first use.

    The cache is keyed by the LLM settings, so an override (tests, `override_settings`) gets a
    matching gateway even without an explicit reset_gateway().
    """
    global _gateway, _gateway_key
    key = _settings_key()
    with _gateway_lock:
        if _gateway is None or _gateway_key != key:
            base_url, api_key, model, timeout_s, max_retries = key
            if base_url:
                _gateway = OpenAIBackend(
                    base_url=base_url,
                    api_key=api_key,
                    model=model,
                    timeout_s=timeout_s,
                    max_retries=max_retries,
                )
            else:
                _gateway = OfflineBackend()
            _gateway_key = key
            llm_state.reset()  # what the badge knew was about another gateway
        return _gateway


def reset_gateway() -> None:
    """Forget the cached gateway; offline handler registrations are kept."""
    global _gateway, _gateway_key
    with _gateway_lock:
        _gateway = None
        _gateway_key = None


def ping(timeout_s: float = 2.0) -> bool:
    """Health check: True for the offline backend, or when the configured endpoint answers."""
    gateway = get_gateway()
    if isinstance(gateway, OpenAIBackend):
        started = time.perf_counter()
        ok = gateway.ping(timeout_s)
        llm_state.record_probe(ok=ok, ms=_elapsed_ms(started))
        return ok
    return True


def backend_label() -> str:
    """German label for the UI."""
    base_url = settings.LLM_BASE_URL
    if not base_url:
        return "Offline-Modus"
    return f"Sprachmodell: {settings.LLM_MODEL} @ {_host_label(base_url)}"
