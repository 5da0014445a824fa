"""Helpers for the directives tests: the chat path and the classifier's scripted answers."""

from __future__ import annotations

import json
import re
from typing import Any

from rest_framework.test import APIClient

from conversation.models import Session
from tests.fakes.openai_server import FakeOpenAI


def say(api: APIClient, session: Session, text: str) -> dict[str, Any]:
    """One message over the real chat path."""
    answer = api.post(f"/api/sessions/{session.pk}/messages/", {"text": text}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()


def is_classify(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and "[FACHSPRACHE]" in (messages[0].get("content") or "")


def script_classifier(fake: FakeOpenAI, answer: dict[str, Any] | str) -> None:
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    fake.add(text, match=is_classify)


def classify_prompts(fake: FakeOpenAI) -> list[str]:
    return [r["messages"][0]["content"] for r in fake.chat_requests() if is_classify(r)]


def responder_prompts(fake: FakeOpenAI) -> list[str]:
    prompts = []
    for request in fake.chat_requests():
        system = "\n".join(
            m.get("content") or "" for m in request.get("messages") or [] if m["role"] == "system"
        )
        if "[IDENTITAET]" in system:
            prompts.append(system)
    return prompts


def block_headers(system: str) -> list[str]:
    return re.findall(r"^\[([A-Z_]+)\]", system, re.MULTILINE)


def last_block(system: str) -> tuple[str, str]:
    """(name, body) of the last "[NAME]" block of a system prompt."""
    matches = list(re.finditer(r"^\[([A-Z_]+)\]", system, re.MULTILINE))
    last = matches[-1]
    return last.group(1), system[last.start() :]


def sent_to_model(fake: FakeOpenAI, text: str) -> bool:
    """Did ``text`` reach the model in any prompt of the turn (composer [AUFGABE] or responder)?"""
    return any(
        text in (m.get("content") or "")
        for request in fake.chat_requests()
        if not is_classify(request)
        for m in request.get("messages") or []
        if m.get("role") == "system"
    )
