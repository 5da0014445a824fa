"""The turn pipeline skeleton against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from conversation.models import PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


def test_reply_streams_from_the_llm_and_every_node_logs(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.set_default("Schön, dass du da bist.")
    tokens: list[str] = []
    result = run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Hallo!",
        on_token=tokens.append,
    )
    assert result.status == "abgeschlossen"
    assert result.reply == "Schön, dass du da bist."
    assert len(tokens) > 1 and "".join(tokens) == result.reply
    assert result.ttft_ms is not None and result.ttft_ms <= result.total_ms
    rows = list(PipelineLog.objects.filter(turn_id=result.turn_id))
    assert [r.node for r in rows] == ["pending", "router", "agent", "responder"]
    assert rows[-1].outcome == "gestreamt"
    assert rows[-1].details["backend"] == "openai"
    request = fake_llm.chat_requests()[-1]
    assert request["stream"] is True
    system = request["messages"][0]
    assert system["role"] == "system"
    # Identity opens the prompt; the rules come after it; the person's words are the last message.
    assert system["content"].startswith("[IDENTITAET]\nDu bist Nova.")
    assert system["content"].index("[IDENTITAET]") < system["content"].index("[REGELN]")
    assert request["messages"][-1] == {"role": "user", "content": "Hallo!"}


def test_history_is_sent_in_order(fake_llm: FakeOpenAI, session: Session, user: Any) -> None:
    fake_llm.set_default("Ok.")
    for text in ("Ich heiße Anna.", "Ich mag Tee."):
        run_turn(user=user, character=session.character, session=session, text=text)
    messages = fake_llm.chat_requests()[-1]["messages"]
    assert [m["content"] for m in messages[1:]] == ["Ich heiße Anna.", "Ok.", "Ich mag Tee."]


@pytest.mark.parametrize(
    ("script", "step"),
    [
        pytest.param({"status": 500}, "llm_http_fehler", id="http-500"),
        pytest.param({"delay_s": 3.0}, "llm_zeitueberschreitung", id="timeout"),
        pytest.param({"break_stream_after": 2}, "llm_abbruch_im_stream", id="broken-stream"),
    ],
)
def test_llm_failure_is_a_named_failed_turn_with_a_german_sentence(
    fake_llm: FakeOpenAI, session: Session, user: Any, script: dict[str, Any], step: str
) -> None:
    fake_llm.add("Das ist eine lange Antwort, die abbricht.", **script)
    result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    assert result.status == "fehler"
    assert result.step == step
    assert "Sprachmodell ist nicht erreichbar" in result.reply
    turn = Turn.objects.get(pk=result.turn_id)
    assert turn.status == "fehler"
    assert PipelineLog.objects.get(turn=turn, node="responder").outcome == step


def test_offline_backend_answers_without_any_server(session: Session, user: Any) -> None:
    result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    assert result.status == "abgeschlossen"
    assert "Offline-Modus" in result.reply
    row = PipelineLog.objects.get(turn_id=result.turn_id, node="responder")
    assert row.details["backend"] == "offline"


def test_log_lines_are_json_and_carry_the_turn_id(
    session: Session, user: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from novaberg.logging import ContextFilter, JsonFormatter

    caplog.handler.addFilter(ContextFilter())
    with caplog.at_level(logging.INFO, logger="novaberg"):
        result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    lines = [r for r in caplog.records if r.name.startswith("novaberg")]
    assert lines, "the turn wrote no log line"
    for record in lines:
        payload = json.loads(JsonFormatter().format(record))
        assert payload["turn_id"] == result.turn_id
