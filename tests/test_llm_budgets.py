"""Budgets of model calls (issue 13), through the real openai client against the fake server:
max_tokens and stop per purpose, deadlines for the first token and the whole call, retries only
before generation, and a stream that the consumer can cancel."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from novaberg import llm
from novaberg.llm import BUDGETS, DEFAULT_BUDGET, StreamEvent, get_gateway, reset_gateway
from tests.fakes.openai_server import FakeOpenAI, closed_port_url

MESSAGES = [
    {"role": "system", "content": "Du bist Nova."},
    {"role": "user", "content": "Erzähl mir etwas."},
]
# What a loaded 2-core machine may add to a deadline (thread start, HTTP, teardown).
SLACK_S = 1.0


@pytest.fixture
def budget_llm(fake_llm: FakeOpenAI, settings: Any) -> FakeOpenAI:
    """The fake server with the silence limit out of the way, so the deadlines are what bind,
    and with the production retry budget."""
    settings.LLM_TIMEOUT_S = 30.0
    settings.LLM_MAX_RETRIES = 2
    # The first call of a process imports the client's lazy modules (seconds on a busy machine);
    # the clocks under test must not measure that.
    get_gateway().chat(MESSAGES, purpose="composer")
    list(get_gateway().stream(MESSAGES, purpose="responder"))
    fake_llm.reset()
    return fake_llm


def _timed(events: Iterator[StreamEvent]) -> tuple[str, list[StreamEvent], float]:
    t0 = time.monotonic()
    collected = list(events)
    wall = time.monotonic() - t0
    return "".join(e.text for e in collected if e.kind == "token"), collected, wall


def _step(events: list[StreamEvent]) -> str | None:
    last = events[-1]
    assert last.kind == "error", last
    assert last.failure is not None
    return last.failure.step


# -- no retry of a generation; deadlines -------------------------------------------------------


def test_slow_generation_is_not_retried_and_ends_at_the_deadline(
    budget_llm: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_TOTAL_S = 0.8
    budget_llm.add("viel zu spät", first_token_delay_s=10.0)
    budget_llm.add("ein zweiter Versuch wäre falsch")

    t0 = time.monotonic()
    result = get_gateway().chat(MESSAGES, purpose="composer")
    wall = time.monotonic() - t0

    assert not result.ok
    assert result.failure is not None
    assert result.failure.step == "zeitlimit_antwort"
    assert wall < 0.8 + SLACK_S
    assert len(budget_llm.chat_requests()) == 1
    assert budget_llm.pending() == 1  # the second answer was never asked for


def test_slow_first_token_of_a_stream_is_not_retried(budget_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_FIRST_TOKEN_S = 0.6
    budget_llm.add("endlich", first_token_delay_s=10.0)

    text, events, wall = _timed(get_gateway().stream(MESSAGES, purpose="responder"))

    assert text == ""
    assert _step(events) == "zeitlimit_erstes_token"
    assert wall < 0.6 + SLACK_S
    assert len(budget_llm.chat_requests()) == 1
    # The upstream request is closed, not left generating.
    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_endless_stream_is_cut_at_the_total_deadline(budget_llm: FakeOpenAI, settings: Any) -> None:
    settings.LLM_TOTAL_S = 0.8
    # 600 tokens (the responder's cap) at 20 ms each would take 12 s: the deadline comes first.
    budget_llm.add("und weiter ", endless=True, chunk_delay_s=0.02)

    text, events, wall = _timed(get_gateway().stream(MESSAGES, purpose="responder"))

    assert text.startswith("und weiter und weiter ")
    assert _step(events) == "zeitlimit_antwort"
    assert wall < 0.8 + SLACK_S
    assert len(budget_llm.chat_requests()) == 1
    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_endless_stream_is_cut_at_max_tokens(budget_llm: FakeOpenAI) -> None:
    budget_llm.add("bla ", endless=True)

    text, events, _ = _timed(get_gateway().stream(MESSAGES, purpose="responder", max_tokens=7))

    assert text == "bla " * 7
    assert events[-1] == StreamEvent("done")
    [body] = budget_llm.chat_requests()
    assert body["max_tokens"] == 7
    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_unstreamed_endless_answer_ends_at_the_deadline(
    budget_llm: FakeOpenAI, settings: Any
) -> None:
    settings.LLM_TOTAL_S = 0.6
    budget_llm.add(endless=True)

    t0 = time.monotonic()
    result = get_gateway().chat(MESSAGES, purpose="directives.classify", json_mode=True)

    assert result.failure is not None
    assert result.failure.step == "zeitlimit_antwort"
    assert time.monotonic() - t0 < 0.6 + SLACK_S
    assert len(budget_llm.chat_requests()) == 1


def test_purpose_deadline_is_shorter_than_the_global_one(
    budget_llm: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(BUDGETS, "router.classify", llm.Budget(max_tokens=48, deadline_s=0.5))
    budget_llm.add('{"ziel": "keins"}', first_token_delay_s=10.0)

    t0 = time.monotonic()
    result = get_gateway().chat(MESSAGES, purpose="router.classify", json_mode=True)

    assert result.failure is not None
    assert result.failure.step == "zeitlimit_antwort"
    assert time.monotonic() - t0 < 0.5 + SLACK_S


# -- retries before generation -----------------------------------------------------------------


def test_500_before_generation_is_retried_then_succeeds(budget_llm: FakeOpenAI) -> None:
    budget_llm.add(status=500, times=2)
    budget_llm.add("Jetzt geht es.")

    result = get_gateway().chat(MESSAGES, purpose="composer")

    assert result.ok
    assert result.text == "Jetzt geht es."
    assert len(budget_llm.chat_requests()) == 3


def test_persistent_503_fails_named_after_the_retry_budget(budget_llm: FakeOpenAI) -> None:
    budget_llm.add(status=503, times=10)

    result = get_gateway().chat(MESSAGES, purpose="composer")

    assert result.failure is not None
    assert result.failure.step == "http_fehler"
    assert result.failure.status == 503
    assert len(budget_llm.chat_requests()) == 3  # one try and LLM_MAX_RETRIES=2 retries


def test_429_is_retried_but_400_is_not(budget_llm: FakeOpenAI) -> None:
    budget_llm.add(status=429)
    budget_llm.add("nach der Pause")
    assert get_gateway().chat(MESSAGES, purpose="composer").text == "nach der Pause"
    assert len(budget_llm.chat_requests()) == 2

    budget_llm.reset()
    budget_llm.add(status=400)
    result = get_gateway().chat(MESSAGES, purpose="composer")
    assert result.failure is not None
    assert result.failure.status == 400
    assert len(budget_llm.chat_requests()) == 1


def test_stream_500_before_the_first_token_is_retried(budget_llm: FakeOpenAI) -> None:
    budget_llm.add(status=500)
    budget_llm.add("Hallo du.")

    text, events, _ = _timed(get_gateway().stream(MESSAGES, purpose="responder"))

    assert text == "Hallo du."
    assert events[-1] == StreamEvent("done")
    assert len(budget_llm.chat_requests()) == 2


def test_refused_connection_is_retried_and_named(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings.LLM_BASE_URL = closed_port_url()
    settings.LLM_MODEL = "fake-model"
    settings.LLM_MAX_RETRIES = 2
    reset_gateway()
    try:
        with caplog.at_level(logging.INFO, logger="novaberg.llm"):
            t0 = time.monotonic()
            result = get_gateway().chat(MESSAGES, purpose="composer")
            wall = time.monotonic() - t0
    finally:
        reset_gateway()

    assert result.failure is not None
    assert result.failure.step == "verbindung"
    assert wall < 0.2 + 0.6 + SLACK_S  # two short backoffs, no long waits
    [record] = [r for r in caplog.records if r.name == "novaberg.llm"]
    assert "retried after verbindung,verbindung" in record.getMessage()


# -- max_tokens and stop per purpose -----------------------------------------------------------


@pytest.mark.parametrize(
    ("purpose", "json_mode", "expected_tokens"),
    [
        ("router.classify", True, 48),
        ("directives.classify", True, 200),
        ("directives.tribunal", True, 160),
        ("conversation_vector", True, 200),
        ("composer", False, 500),
    ],
    ids=["router", "directives_classify", "tribunal", "vector", "composer"],
)
def test_purpose_budget_reaches_the_request(
    budget_llm: FakeOpenAI, purpose: str, json_mode: bool, expected_tokens: int
) -> None:
    get_gateway().chat(MESSAGES, purpose=purpose, json_mode=json_mode)

    [body] = budget_llm.chat_requests()
    assert body["max_tokens"] == expected_tokens
    if json_mode:
        assert "stop" not in body  # a stop would be cut from the JSON and break it
    else:
        assert body["stop"] == ["\nNutzer:"]


def test_responder_stream_has_its_budget(budget_llm: FakeOpenAI) -> None:
    list(get_gateway().stream(MESSAGES, purpose="responder"))

    [body] = budget_llm.chat_requests()
    assert body["max_tokens"] == 600
    assert body["stop"] == ["\nNutzer:"]


def test_callers_max_tokens_is_capped_by_the_purpose(budget_llm: FakeOpenAI) -> None:
    gateway = get_gateway()
    gateway.chat(MESSAGES, purpose="router.classify", max_tokens=4000)
    gateway.chat(MESSAGES, purpose="router.classify", max_tokens=20)

    first, second = budget_llm.chat_requests()
    assert first["max_tokens"] == 48
    assert second["max_tokens"] == 20


def test_unknown_purpose_gets_the_default_budget_and_a_warning(
    budget_llm: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="novaberg.llm.budget"):
        get_gateway().chat(MESSAGES, purpose="test.ohne_budget")

    [body] = budget_llm.chat_requests()
    assert body["max_tokens"] == DEFAULT_BUDGET.max_tokens
    warnings = [r for r in caplog.records if r.name == "novaberg.llm.budget"]
    assert [r.purpose for r in warnings] == ["test.ohne_budget"]  # type: ignore[attr-defined]


def test_every_registered_purpose_has_a_budget() -> None:
    # The apps register an offline answer for each purpose they call the model with.
    purposes = {p for p in llm._offline_handlers if not p.startswith("test.")}

    assert purposes  # the apps are loaded
    assert purposes - set(BUDGETS) == set()


# -- cancel ------------------------------------------------------------------------------------


def test_cancel_event_closes_the_upstream_stream(budget_llm: FakeOpenAI) -> None:
    budget_llm.add("wort ", endless=True)
    cancel = threading.Event()
    tokens: list[str] = []

    t0 = time.monotonic()
    events = get_gateway().stream(MESSAGES, purpose="responder", cancel=cancel)
    for event in events:
        if event.kind == "token":
            tokens.append(event.text)
            if len(tokens) == 3:
                cancel.set()  # as the Stop button would, from the consumer's side
            continue
        last = event
    wall = time.monotonic() - t0

    assert last.kind == "error"
    assert last.failure is not None
    assert last.failure.step == "abgebrochen"
    assert 3 <= len(tokens) < 20
    assert wall < SLACK_S
    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_cancel_from_another_thread_while_waiting_for_the_first_token(
    budget_llm: FakeOpenAI,
) -> None:
    budget_llm.add("zu spät", first_token_delay_s=10.0)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()

    text, events, wall = _timed(get_gateway().stream(MESSAGES, purpose="responder", cancel=cancel))

    assert text == ""
    assert _step(events) == "abgebrochen"
    assert wall < 0.3 + SLACK_S
    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_cancel_callable_is_accepted(budget_llm: FakeOpenAI) -> None:
    budget_llm.add("eins zwei drei vier", chunk_delay_s=0.05)
    seen: list[str] = []

    events = get_gateway().stream(MESSAGES, purpose="responder", cancel=lambda: len(seen) >= 2)
    for event in events:
        if event.kind == "token":
            seen.append(event.text)
        last = event

    assert seen == ["eins ", "zwei "]
    assert last.failure is not None
    assert last.failure.step == "abgebrochen"


def test_consumer_that_stops_iterating_closes_the_upstream(budget_llm: FakeOpenAI) -> None:
    budget_llm.add("weiter ", endless=True)

    events = get_gateway().stream(MESSAGES, purpose="responder")
    assert next(events).kind == "token"
    events.close()  # type: ignore[attr-defined]

    assert budget_llm.wait_for_disconnect(timeout_s=3.0)


def test_offline_stream_honours_cancel(settings: Any) -> None:
    settings.LLM_BASE_URL = ""
    reset_gateway()
    try:
        gateway = get_gateway()
        assert gateway.name == "offline"
        llm.register_offline("test.lang", lambda messages, hints: "eins zwei drei vier")
        seen: list[StreamEvent] = []
        for event in gateway.stream(MESSAGES, purpose="test.lang", cancel=lambda: len(seen) >= 2):
            seen.append(event)
    finally:
        llm._offline_handlers.pop("test.lang", None)
        reset_gateway()

    assert [e.kind for e in seen] == ["token", "token", "error"]
    assert seen[-1].failure is not None
    assert seen[-1].failure.step == "abgebrochen"
