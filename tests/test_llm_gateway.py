"""The chat gateway against a real HTTP server (the fake) through the real openai client, and the
offline backend."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from novaberg import llm
from novaberg.llm import (
    ChatResult,
    OfflineBackend,
    OpenAIBackend,
    StreamEvent,
    get_gateway,
    register_offline,
    reset_gateway,
)
from tests.fakes.openai_server import FakeOpenAI

MESSAGES = [
    {"role": "system", "content": "Du bist Nova."},
    {"role": "user", "content": "Wie geht es dir heute?"},
]


def _collect(events: Iterator[StreamEvent]) -> tuple[str, list[StreamEvent]]:
    collected = list(events)
    return "".join(e.text for e in collected if e.kind == "token"), collected


def _closed_port() -> int:
    # Bind, read the port, close: nothing listens there afterwards, so a connect is refused.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- OpenAI backend ----------------------------------------------------------------------------


def test_gateway_is_openai_backend_when_base_url_set(fake_llm: FakeOpenAI) -> None:
    gateway = get_gateway()
    assert isinstance(gateway, OpenAIBackend)
    assert gateway.name == "openai"
    assert gateway.model == "fake-model"
    port = fake_llm.base_url.split(":")[2].split("/")[0]
    assert llm.backend_label() == f"Sprachmodell: fake-model @ 127.0.0.1:{port}"


def test_plain_chat_returns_text_and_records_exact_messages(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("Mir geht es gut, danke!")

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result == ChatResult(
        ok=True,
        text="Mir geht es gut, danke!",
        failure=None,
        backend="openai",
        model="fake-model",
        ms=result.ms,
    )
    [body] = fake_llm.chat_requests()
    assert body["messages"] == MESSAGES
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0.3
    assert "response_format" not in body
    assert fake_llm.system_prompt() == "Du bist Nova."


def test_chat_passes_max_tokens_and_temperature(fake_llm: FakeOpenAI) -> None:
    get_gateway().chat(MESSAGES, purpose="test", temperature=0.0, max_tokens=50)

    [body] = fake_llm.chat_requests()
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 50


def test_scripted_answers_first_match_wins(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("für Brot", match=lambda b: "Brot" in b["messages"][-1]["content"])
    fake_llm.add("erste")
    fake_llm.set_default("Standard")
    gateway = get_gateway()

    assert gateway.chat([{"role": "user", "content": "Hallo"}], purpose="t").text == "erste"
    assert gateway.chat([{"role": "user", "content": "Brot?"}], purpose="t").text == "für Brot"
    assert gateway.chat([{"role": "user", "content": "Brot?"}], purpose="t").text == "Standard"
    assert fake_llm.pending() == 0


def test_json_mode_sends_response_format(fake_llm: FakeOpenAI) -> None:
    fake_llm.add('{"absicht": "keine"}')

    result = get_gateway().chat(MESSAGES, purpose="classify", json_mode=True)

    assert result.ok
    # The gateway does not parse JSON: the caller's reader gets the raw text.
    assert result.text == '{"absicht": "keine"}'
    [body] = fake_llm.chat_requests()
    assert body["response_format"] == {"type": "json_object"}


def test_json_mode_rejected_with_400_is_retried_once_without(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(status=400, match=lambda b: "response_format" in b)
    fake_llm.add('{"ok": true}')

    result = get_gateway().chat(MESSAGES, purpose="classify", json_mode=True)

    assert result.ok
    assert result.text == '{"ok": true}'
    first, second = fake_llm.chat_requests()
    assert "response_format" in first
    assert "response_format" not in second
    assert second["messages"] == MESSAGES


def test_400_without_json_mode_is_http_error(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(status=400)

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result.failure is not None
    assert result.failure.step == "http_fehler"
    assert result.failure.status == 400
    assert len(fake_llm.chat_requests()) == 1


def test_http_500_is_named_http_error(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(status=500)

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert not result.ok
    assert result.text == ""
    assert result.failure is not None
    assert result.failure.step == "http_fehler"
    assert result.failure.status == 500
    assert "500" in result.failure.message
    # LLM_MAX_RETRIES=0 in the fixture: exactly one attempt.
    assert len(fake_llm.chat_requests()) == 1


def test_max_retries_setting_reaches_the_client(fake_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_MAX_RETRIES = 1
    fake_llm.add(status=500)
    fake_llm.add("zweiter Versuch")

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result.ok
    assert result.text == "zweiter Versuch"
    assert len(fake_llm.chat_requests()) == 2


def test_timeout_is_named(fake_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_TIMEOUT_S = 0.3
    fake_llm.add("zu spät", delay_s=1.0)

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert not result.ok
    assert result.failure is not None
    assert result.failure.step == "zeitueberschreitung"
    assert result.ms < 1000


def test_malformed_body_is_unreadable(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("egal", malformed=True)

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert not result.ok
    assert result.failure is not None
    assert result.failure.step == "antwort_unlesbar"


def test_empty_answer_is_unreadable(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("   ")

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result.failure is not None
    assert result.failure.step == "antwort_unlesbar"


def test_connection_refused_is_named(settings: Any) -> None:
    settings.LLM_BASE_URL = f"http://127.0.0.1:{_closed_port()}/v1"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_MAX_RETRIES = 0
    settings.LLM_TIMEOUT_S = 2
    reset_gateway()
    try:
        gateway = get_gateway()
        result = gateway.chat(MESSAGES, purpose="test")
        text, events = _collect(gateway.stream(MESSAGES, purpose="test"))
    finally:
        reset_gateway()

    assert result.failure is not None
    assert result.failure.step == "verbindung"
    assert text == ""
    assert [e.kind for e in events] == ["error"]
    assert events[0].failure is not None
    assert events[0].failure.step == "verbindung"


def test_stream_tokens_join_to_the_text(fake_llm: FakeOpenAI) -> None:
    answer = "Guten Morgen!  Heute ist\nein schöner Tag, nicht wahr? "
    fake_llm.add(answer)

    text, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert text == answer
    assert sum(e.kind == "token" for e in events) > 3  # really streamed in pieces
    assert events[-1] == StreamEvent("done")
    [body] = fake_llm.chat_requests()
    assert body["stream"] is True
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.7


def test_stream_http_500_is_error_event(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(status=500)

    text, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert text == ""
    assert [e.kind for e in events] == ["error"]
    assert events[0].failure is not None
    assert events[0].failure.step == "http_fehler"
    assert events[0].failure.status == 500


def test_broken_stream_ends_with_named_error(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("eins zwei drei vier fünf sechs", break_stream_after=3)

    text, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert text == "eins zwei drei "
    assert [e.kind for e in events] == ["token", "token", "token", "error"]
    assert events[-1].failure is not None
    assert events[-1].failure.step == "abbruch_im_stream"


def test_stream_stalling_past_timeout_is_named(fake_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_TIMEOUT_S = 0.3
    fake_llm.add("eins zwei", chunk_delay_s=1.0)

    text, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert text == "eins "
    assert events[-1].kind == "error"
    assert events[-1].failure is not None
    assert events[-1].failure.step == "zeitueberschreitung"


def test_malformed_stream_is_unreadable(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("egal", malformed=True)

    _, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert events[-1].kind == "error"
    assert events[-1].failure is not None
    assert events[-1].failure.step == "antwort_unlesbar"


def test_every_call_logs_one_structured_line(
    fake_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.add("ok")
    fake_llm.add(status=503)

    with caplog.at_level(logging.INFO, logger="novaberg.llm"):
        get_gateway().chat(MESSAGES, purpose="router")
        get_gateway().chat(MESSAGES, purpose="composer")

    records = [r for r in caplog.records if r.name == "novaberg.llm"]
    assert [(r.purpose, r.outcome) for r in records] == [  # type: ignore[attr-defined]
        ("router", "ok"),
        ("composer", "http_fehler"),
    ]
    assert all(isinstance(r.ms, int) for r in records)  # type: ignore[attr-defined]


def test_gateway_follows_settings_changes(fake_llm: FakeOpenAI, settings: Any) -> None:
    assert isinstance(get_gateway(), OpenAIBackend)
    settings.LLM_BASE_URL = ""
    assert isinstance(get_gateway(), OfflineBackend)
    assert llm.backend_label() == "Offline-Modus"


# -- Offline backend ---------------------------------------------------------------------------


@pytest.fixture
def offline(settings: Any) -> Iterator[OfflineBackend]:
    settings.LLM_BASE_URL = ""
    reset_gateway()
    saved = dict(llm._offline_handlers)
    gateway = get_gateway()
    assert isinstance(gateway, OfflineBackend)
    yield gateway
    llm._offline_handlers.clear()
    llm._offline_handlers.update(saved)
    reset_gateway()


def _echo_handler(messages: list[dict[str, str]], hints: dict) -> str:
    last = messages[-1]["content"]
    return f"Du sagtest: {last} ({hints.get('form', 'du')})\n  Schön."


def test_offline_uses_registered_handler(offline: OfflineBackend) -> None:
    register_offline("test.echo", _echo_handler)

    result = offline.chat(MESSAGES, purpose="test.echo", hints={"form": "Sie"})

    assert result.ok
    assert result.text == "Du sagtest: Wie geht es dir heute? (Sie)\n  Schön."
    assert result.backend == "offline"
    assert llm.backend_label() == "Offline-Modus"


def test_offline_is_deterministic(offline: OfflineBackend) -> None:
    register_offline("test.echo", _echo_handler)

    answers = {offline.chat(MESSAGES, purpose="test.echo").text for _ in range(5)}

    assert len(answers) == 1


def test_offline_handler_gets_empty_hints_when_none(offline: OfflineBackend) -> None:
    seen: list[dict] = []

    def handler(messages: list[dict[str, str]], hints: dict) -> str:
        seen.append(hints)
        return "x"

    register_offline("test.hints", handler)
    offline.chat(MESSAGES, purpose="test.hints")

    assert seen == [{}]


def test_offline_stream_tokens_join_to_chat_text(offline: OfflineBackend) -> None:
    register_offline("test.echo", _echo_handler)
    expected = offline.chat(MESSAGES, purpose="test.echo").text

    text, events = _collect(offline.stream(MESSAGES, purpose="test.echo"))

    assert text == expected
    assert sum(e.kind == "token" for e in events) > 3
    assert events[-1] == StreamEvent("done")


def test_offline_unregistered_purpose_is_named(offline: OfflineBackend) -> None:
    result = offline.chat(MESSAGES, purpose="test.niemand")
    _, events = _collect(offline.stream(MESSAGES, purpose="test.niemand"))

    assert not result.ok
    assert result.failure is not None
    assert result.failure.step == "offline_kein_handler"
    assert [e.kind for e in events] == ["error"]
    assert events[0].failure is not None
    assert events[0].failure.step == "offline_kein_handler"


@pytest.mark.parametrize(
    "text",
    ["", "eins", "  führend", "Ende mit Leerzeichen  ", "Zeilen\n\nund\tTabs", "a  b   c"],
    ids=["leer", "ein_wort", "fuehrend", "nachlaufend", "zeilen_tabs", "mehrfach"],
)
def test_split_tokens_reproduces_text(text: str) -> None:
    assert "".join(llm.split_tokens(text)) == text


def test_stream_ending_without_finish_reason_is_broken(
    fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The openai client ends a stream silently when the body ends without [DONE]; the gateway
    # must still notice that the answer was cut off.
    def chunk(content: str) -> SimpleNamespace:
        choice = SimpleNamespace(delta=SimpleNamespace(content=content), finish_reason=None)
        return SimpleNamespace(choices=[choice])

    gateway = get_gateway()
    monkeypatch.setattr(gateway, "_create", lambda **kw: iter([chunk("Hallo "), chunk("du")]))

    text, events = _collect(gateway.stream(MESSAGES, purpose="reply"))

    assert text == "Hallo du"
    assert events[-1].failure is not None
    assert events[-1].failure.step == "abbruch_im_stream"


def test_non_json_body_returned_as_text_is_unreadable(
    fake_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    # For a text/plain body the openai client returns the bare string instead of raising.
    gateway = get_gateway()
    monkeypatch.setattr(gateway, "_create", lambda **kw: "<html>Bad Gateway</html>")

    result = gateway.chat(MESSAGES, purpose="test")

    assert result.failure is not None
    assert result.failure.step == "antwort_unlesbar"


def test_ping_reaches_the_fake_server(fake_llm: FakeOpenAI) -> None:
    assert llm.ping() is True
    assert fake_llm.requests[-1] == {"path": "/v1/models"}


def test_ping_fails_on_closed_port(settings: Any) -> None:
    settings.LLM_BASE_URL = f"http://127.0.0.1:{_closed_port()}/v1"
    settings.LLM_MAX_RETRIES = 0

    assert llm.ping(timeout_s=1.0) is False


def test_ping_offline_is_true(offline: OfflineBackend) -> None:
    assert llm.ping() is True


# -- the fake server's bad models (issue 13) ---------------------------------------------------


def test_non_json_page_is_unreadable(fake_llm: FakeOpenAI) -> None:
    fake_llm.add(non_json=True)

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result.failure is not None
    assert result.failure.step == "antwort_unlesbar"


def test_wrong_shape_is_unreadable_in_chat_and_stream(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("Hallo", wrong_shape=True, times=2)
    gateway = get_gateway()

    result = gateway.chat(MESSAGES, purpose="test")
    text, events = _collect(gateway.stream(MESSAGES, purpose="reply"))

    assert result.failure is not None
    assert result.failure.step == "antwort_unlesbar"
    assert text == ""
    assert events[-1].failure is not None
    assert events[-1].failure.step == "antwort_unlesbar"


def test_empty_streamed_answer_is_unreadable(fake_llm: FakeOpenAI) -> None:
    fake_llm.add("")

    text, events = _collect(get_gateway().stream(MESSAGES, purpose="reply"))

    assert text == ""
    assert [e.kind for e in events] == ["error"]
    assert events[0].failure is not None
    assert events[0].failure.step == "antwort_unlesbar"


def test_read_timeout_is_not_retried(fake_llm: FakeOpenAI, settings: Any) -> None:
    # issue 13: the client used to retry read timeouts (3 × the timeout per call).
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_TIMEOUT_S = 0.3
    fake_llm.add("zu spät", delay_s=1.0)
    fake_llm.add("nie verlangt")

    result = get_gateway().chat(MESSAGES, purpose="test")

    assert result.failure is not None
    assert result.failure.step == "zeitueberschreitung"
    assert len(fake_llm.chat_requests()) == 1
