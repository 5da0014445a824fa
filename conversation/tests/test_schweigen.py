"""Seed 003 §2.1, the vehicle Schweigen: an empty composer content on purpose is a short
non-answer, not "Das Sprachmodell ist nicht erreichbar" (issue 12)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import PipelineLog, Session
from conversation.pipeline.composer import LLM_FAILED_TEXT, SILENCE_TEXT
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


def _system(body: dict[str, Any]) -> str:
    return str(((body.get("messages") or [{}])[0]).get("content") or "")


def _vector(vehicle: str) -> str:
    return json.dumps(
        {"strategie": "spiegeln", "absicht": "emotional", "vehikel": vehicle, "impuls": "da sein"}
    )


def _say(api: APIClient, session: Session, text: str) -> dict[str, Any]:
    answer = api.post(f"/api/sessions/{session.pk}/messages/", {"text": text}, format="json")
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def test_silence_on_purpose_is_a_short_non_answer(
    fake_llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(_vector("schweigen"), match=lambda b: "GESPRAECHSVEKTOR-ANALYSE" in _system(b))
    fake_llm.add("", match=lambda b: "[VERFASSER]" in _system(b))

    answer = _say(api, session, "Ich mag gerade einfach nicht reden.")

    assert answer["reply"] == SILENCE_TEXT
    assert "nicht erreichbar" not in answer["reply"]
    assert answer["status"] != "fehler"
    nodes = dict(
        PipelineLog.objects.filter(turn_id=answer["turn_id"]).values_list("node", "outcome")
    )
    assert nodes["composer"] == "schweigen"
    assert nodes["responder"] == "schweigen"


def test_empty_content_without_silence_is_a_named_fallback_to_the_offline_composer(
    fake_llm: FakeOpenAI, api: APIClient, session: Session
) -> None:
    fake_llm.set_default("Gern.")
    fake_llm.add(_vector("aussage"), match=lambda b: "GESPRAECHSVEKTOR-ANALYSE" in _system(b))
    fake_llm.add("", match=lambda b: "[VERFASSER]" in _system(b))

    answer = _say(api, session, "Ich mag gerade einfach nicht reden.")

    # Issue 13: not silence, not a bare error either — the offline composer's content.
    assert answer["reply"] not in (LLM_FAILED_TEXT, SILENCE_TEXT)
    assert answer["status"] != "fehler"
    composer = PipelineLog.objects.get(turn_id=answer["turn_id"], node="composer")
    assert composer.outcome == "ersatz_offline"
    assert composer.details["modellfehler"] == "leer"
