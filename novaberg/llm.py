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
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from django.conf import settings

logger = logging.getLogger("novaberg.llm")

OfflineHandler = Callable[[list[dict[str, str]], dict], str]

# Named failure steps (see LLMFailure.step).
STEP_TIMEOUT = "zeitueberschreitung"
STEP_CONNECTION = "verbindung"
STEP_HTTP = "http_fehler"
STEP_UNREADABLE = "antwort_unlesbar"
STEP_STREAM_BROKEN = "abbruch_im_stream"
STEP_NO_HANDLER = "offline_kein_handler"


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
    ) -> ChatResult: ...

    def stream(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        hints: dict | None = None,
        temperature: float = 0.7,
    ) -> Iterator[StreamEvent]: ...


# A word with the whitespace after it, or leading whitespace on its own: the pieces cover every
# character, so "".join(split_tokens(t)) == t always holds (streaming must not alter the text).
_TOKEN_RE = re.compile(r"\S+\s*|\s+")


def split_tokens(text: str) -> list[str]:
    """Split text into word-ish stream tokens that join back to exactly `text`."""
    return _TOKEN_RE.findall(text)


def _elapsed_ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


def _log_call(
    *, backend: str, model: str, purpose: str, ms: int, outcome: str, detail: str
) -> None:
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
    ) -> ChatResult:
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
    ) -> Iterator[StreamEvent]:
        started = time.perf_counter()
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
            yield StreamEvent("token", text=token)
        yield StreamEvent("done")


# --------------------------------------------------------------------------------------------
# OpenAI-compatible backend
# --------------------------------------------------------------------------------------------


def _failure_from_exception(exc: BaseException) -> LLMFailure:
    """Map an exception raised by the openai client (or while reading its answer) to a step."""
    import openai

    # Order matters: APITimeoutError is a subclass of APIConnectionError.
    # The client's own messages ("Connection error.") hide the cause; the log needs it.
    cause = f" ({type(exc.__cause__).__name__}: {exc.__cause__})" if exc.__cause__ else ""
    if isinstance(exc, openai.APITimeoutError):
        return LLMFailure(STEP_TIMEOUT, f"request timed out{cause}"[:500])
    if isinstance(exc, openai.APIConnectionError):
        return LLMFailure(STEP_CONNECTION, f"connection failed{cause}"[:500])
    if isinstance(exc, openai.APIStatusError):
        return LLMFailure(STEP_HTTP, exc.message[:500], status=exc.status_code)
    # APIResponseValidationError, ValueError from json decoding, pydantic validation errors and
    # anything else unexpected: the server answered, but not with something we can read.
    return LLMFailure(STEP_UNREADABLE, f"{type(exc).__name__}: {exc}"[:500])


def _host_label(base_url: str) -> str:
    parts = urlsplit(base_url)
    return parts.netloc or base_url


class OpenAIBackend:
    name = "openai"

    def __init__(
        self, *, base_url: str, api_key: str, model: str, timeout_s: float, max_retries: int
    ) -> None:
        import openai

        self.model = model
        self.base_url = base_url
        # Local servers (Ollama, llama.cpp) accept any key, but the client refuses an empty one.
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=max_retries,
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

    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        purpose: str,
        json_mode: bool = False,
        hints: dict | None = None,
        temperature: float = 0.3,
        max_tokens: int | None = None,
    ) -> ChatResult:
        import openai

        started = time.perf_counter()
        kwargs: dict[str, Any] = {"messages": messages, "temperature": temperature}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        detail = ""
        text = ""
        failure: LLMFailure | None = None
        try:
            try:
                if json_mode:
                    response = self._create(response_format={"type": "json_object"}, **kwargs)
                else:
                    response = self._create(**kwargs)
            except openai.BadRequestError:
                if not json_mode:
                    raise
                # Some OpenAI-compatible servers do not know response_format; the prompt still
                # asks for JSON and the caller's reader checks the answer, so ask once without.
                detail = "json_mode rejected, retried without response_format"
                response = self._create(**kwargs)
            text, failure = self._read_completion(response)
        except Exception as exc:  # the contract: a named failure, never an exception
            failure = _failure_from_exception(exc)
        ms = _elapsed_ms(started)
        _log_call(
            backend=self.name,
            model=self.model,
            purpose=purpose,
            ms=ms,
            outcome="ok" if failure is None else failure.step,
            detail=detail if failure is None else f"{detail} {failure.message}".strip(),
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
    ) -> Iterator[StreamEvent]:
        started = time.perf_counter()
        tokens = 0
        outcome = "abgebrochen_vom_aufrufer"  # if the consumer stops iterating early
        detail = "stream"
        failure: LLMFailure | None = None
        try:
            try:
                chunks = self._create(messages=messages, temperature=temperature, stream=True)
            except Exception as exc:
                failure = _failure_from_exception(exc)
                outcome, detail = failure.step, f"stream {failure.message}"
                yield StreamEvent("error", failure=failure)
                return

            finished = False
            try:
                for chunk in chunks:
                    choices = getattr(chunk, "choices", None)
                    if not isinstance(choices, list):
                        raise ValueError(f"stream chunk without choices: {type(chunk).__name__}")
                    if not choices:
                        continue  # usage-only chunks carry no text
                    content = getattr(choices[0].delta, "content", None)
                    if content:
                        tokens += 1
                        yield StreamEvent("token", text=content)
                    if choices[0].finish_reason is not None:
                        finished = True
            except Exception as exc:
                failure = _failure_from_exception(exc)
                if failure.step == STEP_CONNECTION:
                    # The response had started, so a dropped connection is a broken stream.
                    failure = LLMFailure(
                        STEP_STREAM_BROKEN, f"after {tokens} tokens: {failure.message}"
                    )
            else:
                if not finished:
                    # The openai client ends silently when the body ends without [DONE]; a
                    # missing finish_reason is the only trace of a cut-off answer.
                    failure = LLMFailure(
                        STEP_STREAM_BROKEN, f"stream ended without finish_reason after {tokens}"
                    )
                elif tokens == 0:
                    failure = LLMFailure(STEP_UNREADABLE, "stream finished without any text")
            finally:
                close = getattr(chunks, "close", None)
                if callable(close):
                    close()
            if failure is not None:
                outcome, detail = failure.step, f"stream tokens={tokens} {failure.message}"
                yield StreamEvent("error", failure=failure)
                return
            outcome, detail = "ok", f"stream tokens={tokens}"
            yield StreamEvent("done")
        finally:
            _log_call(
                backend=self.name,
                model=self.model,
                purpose=purpose,
                ms=_elapsed_ms(started),
                outcome=outcome,
                detail=detail,
            )


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
        return gateway.ping(timeout_s)
    return True


def backend_label() -> str:
    """German label for the UI."""
    base_url = settings.LLM_BASE_URL
    if not base_url:
        return "Offline-Modus"
    return f"Sprachmodell: {settings.LLM_MODEL} @ {_host_label(base_url)}"
