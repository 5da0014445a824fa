"""The gateway against a real OpenAI-compatible server (`make test-llm`; skipped without
NOVABERG_LLM_BASE_URL). Robustness, not wisdom: every call ends within its purpose's deadline
with text or a named failure, a stream is well formed, and a cancelled stream ends at once and
is closed upstream. Every path here is also tested against the fake server (tests/fakes/)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings as django_settings

from conversation.models import Session
from conversation.pipeline import run_turn
from directives.models import Directive
from novaberg.llm import STEP_CANCELLED, StreamEvent, get_gateway
from tests.real_llm import (
    SERVER_LOG,
    SERVER_SAW_DISCONNECT,
    SLACK_S,
    Calls,
    ServerLog,
    call_deadline_s,
    capture_calls,
    late_calls,
    needs_real_llm,
    turn_deadline_s,
    use_real_llm,
)

pytestmark = needs_real_llm

# A prompt a small model goes on with for long: what Stop has to cut.
LONG_REPLY = [
    {"role": "system", "content": "Du bist Nova. Erzähle ausführlich."},
    {
        "role": "user",
        "content": "Erzähl mir eine sehr lange Geschichte über einen Leuchtturm am Meer, "
        "mit vielen Einzelheiten, mindestens zwanzig Absätze.",
    },
]


@pytest.fixture
def real_llm(settings: Any) -> None:
    use_real_llm(settings)


@pytest.fixture
def llm_calls() -> Iterator[Calls]:
    with capture_calls() as calls:
        yield calls


def test_an_unstreamed_json_call_ends_within_its_deadline_with_text_or_a_named_failure(
    real_llm: None,
) -> None:
    t0 = time.monotonic()
    result = get_gateway().chat(
        [
            {"role": "system", "content": 'Antworte nur mit JSON: {"antwort": <Text>}'},
            {"role": "user", "content": "Wie heißt die Hauptstadt von Frankreich?"},
        ],
        purpose="directives.classify",
        json_mode=True,
    )
    waited = time.monotonic() - t0
    assert waited <= call_deadline_s("directives.classify") + SLACK_S
    if result.ok:
        assert result.text.strip()
    else:
        assert result.failure is not None and result.failure.step  # named, never an exception


def test_a_stream_is_tokens_then_exactly_one_end_within_the_deadline(real_llm: None) -> None:
    t0 = time.monotonic()
    first_token_at: float | None = None
    events: list[StreamEvent] = []
    for event in get_gateway().stream(LONG_REPLY, purpose="responder"):
        if event.kind == "token" and first_token_at is None:
            first_token_at = time.monotonic() - t0
        events.append(event)
    waited = time.monotonic() - t0
    kinds = [e.kind for e in events]
    assert kinds[-1] in {"done", "error"} and kinds.count("done") + kinds.count("error") == 1
    assert set(kinds[:-1]) <= {"token"}
    assert all(isinstance(e.text, str) and e.text for e in events[:-1])
    text = "".join(e.text for e in events[:-1])
    assert "\ufffd" not in text  # no multi-byte character broken between two chunks
    assert waited <= call_deadline_s("responder") + SLACK_S
    if first_token_at is not None:
        assert first_token_at <= float(django_settings.LLM_FIRST_TOKEN_S) + SLACK_S


def test_a_cancelled_stream_ends_at_once_and_the_server_stops_generating(real_llm: None) -> None:
    cancel = threading.Event()
    server = ServerLog(SERVER_LOG) if SERVER_LOG is not None else None
    events: list[StreamEvent] = []
    cancelled_at = 0.0
    for event in get_gateway().stream(LONG_REPLY, purpose="responder", cancel=cancel):
        events.append(event)
        if event.kind == "token" and len(events) == 3:
            cancel.set()  # the person presses Stop while the reply is streaming
            cancelled_at = time.monotonic()
    assert cancelled_at, f"the model sent fewer than 3 tokens: {events}"
    ended_after = time.monotonic() - cancelled_at
    last = events[-1]
    assert last.kind == "error" and last.failure is not None, last
    assert last.failure.step == STEP_CANCELLED
    assert ended_after < 2.0
    if server is not None:
        # The connection was closed upstream: llama.cpp's server noticed at its next token and
        # stopped generating (it would otherwise write up to 600 tokens nobody reads).
        assert server.wait_for(SERVER_SAW_DISCONNECT, timeout_s=15), server.new_text()[-2000:]


@pytest.mark.django_db
def test_a_directive_by_chat_reaches_the_question_within_the_turn_deadline(
    real_llm: None, session: Session, user: Any, llm_calls: Calls
) -> None:
    t0 = time.monotonic()
    result = run_turn(
        user=user, character=session.character, session=session, text="Sieze mich ab jetzt immer."
    )
    waited = time.monotonic() - t0
    assert result.status == "rueckfrage", (result.status, result.step, result.reply)
    assert result.question and "Soll ich das so machen?" in result.question
    assert not Directive.objects.filter(user=user).exists()  # asked, not written
    assert waited <= turn_deadline_s() + SLACK_S
    assert not late_calls(llm_calls.calls)
