"""Against a real language model: run with NOVABERG_LLM_BASE_URL (and _MODEL, _API_KEY) set,
e.g. a local Ollama. Skipped otherwise; every LLM path is also tested against the fake server."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from conversation.models import Session
from conversation.pipeline import run_turn
from novaberg.llm import get_gateway, reset_gateway

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        not os.environ.get("NOVABERG_LLM_BASE_URL"), reason="NOVABERG_LLM_BASE_URL not set"
    ),
]


@pytest.fixture
def real_llm(settings: Any) -> None:
    settings.LLM_BASE_URL = os.environ["NOVABERG_LLM_BASE_URL"]
    settings.LLM_API_KEY = os.environ.get("NOVABERG_LLM_API_KEY", "")
    settings.LLM_MODEL = os.environ.get("NOVABERG_LLM_MODEL", settings.LLM_MODEL)
    reset_gateway()


def test_the_model_answers_in_json_when_asked(real_llm: None) -> None:
    result = get_gateway().chat(
        [
            {"role": "system", "content": 'Antworte nur mit JSON: {"antwort": <Text>}'},
            {"role": "user", "content": "Wie heißt die Hauptstadt von Frankreich?"},
        ],
        purpose="test.json",
        json_mode=True,
    )
    assert result.ok, result.failure
    assert "Paris" in json.loads(result.text)["antwort"]


@pytest.mark.django_db
def test_a_directive_by_chat_reaches_the_question(
    real_llm: None, session: Session, user: Any
) -> None:
    result = run_turn(
        user=user, character=session.character, session=session, text="Sieze mich ab sofort immer."
    )
    assert result.status == "rueckfrage"
    assert result.question and "Soll ich das so machen?" in result.question
