"""Issue 27, as it was found: a web process killed in the middle of a turn left the turn
``laufend`` with no reply, forever. Here a real daphne is SIGKILLed while its turn waits for a
model that never answers; the next daphne closes the turn as ``unterbrochen`` before it answers
its first request, and the chat shows the note under the person's message."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from conversation import reaper
from conversation.models import Session, Turn
from conversation.vocabulary import Status
from tests.fakes.openai_server import FakeOpenAI
from tests.processes import DAPHNE_START_S, free_port, listening, log_dir, process_env, start, stop

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _daphne(fake: FakeOpenAI, name: str) -> tuple[int, Any]:
    port = free_port()
    env = process_env(
        NOVABERG_LLM_BASE_URL=fake.base_url,
        NOVABERG_LLM_API_KEY="test",
        NOVABERG_LLM_MODEL="fake-model",
        # The fake serves the embeddings too: no local model to load before the turn starts.
        NOVABERG_EMBEDDINGS="openai",
        NOVABERG_LOG_LEVEL="WARNING",
    )
    proc = start(
        ["daphne", "-b", "127.0.0.1", "-p", str(port), "novaberg.asgi:application"],
        log_path=log_dir() / f"reaper-{name}.log",
        ready=listening(port),
        env=env,
        timeout_s=DAPHNE_START_S,
    )
    return port, proc


def _send(port: int, session: Session, token: str, text: str) -> None:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/sessions/{session.pk}/messages/",
        data=json.dumps({"text": text}).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        urllib.request.urlopen(request, timeout=300).read()
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        pass  # the server is killed under it


def _wait_for(check: Any, what: str, timeout_s: float = 120.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(what)


def test_a_turn_cut_by_a_killed_web_process_is_closed_when_the_next_one_starts(
    fake_openai: FakeOpenAI, user: Any, session: Session
) -> None:
    fake_openai.add("Zu spät.", first_token_delay_s=240.0, times=50)  # never, for this test
    token = Token.objects.create(user=user).key
    port, first = _daphne(fake_openai, "first")
    try:
        sender = threading.Thread(target=_send, args=(port, session, token, "Bist du da?"))
        sender.start()
        owned = f"|{first.pid}|"
        turn = _wait_for(
            lambda: Turn.objects.filter(
                session=session, status=Status.RUNNING, owner__contains=owned
            ).first(),
            "the first daphne never started the turn",
        )
        first.kill()
        first.wait(10)
        sender.join(30)
    finally:
        stop(first)
    turn.refresh_from_db()
    assert turn.status == Status.RUNNING  # left so by the dead process

    port, second = _daphne(fake_openai, "second")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=60) as answer:
            assert answer.status == 200
    finally:
        stop(second)

    turn.refresh_from_db()
    assert (turn.status, turn.step) == (Status.INTERRUPTED, reaper.STEP_DEAD)
    assert not turn.replies.exists()
    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/chat/{session.pk}/").content.decode()
    assert reaper.note_for(reaper.STEP_DEAD) in page
