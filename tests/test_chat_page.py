"""The chat page a person sees: developer details only for staff, a welcome for a new chat,
Nova's Markdown rendered and her raw HTML escaped."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from conversation.models import Session, Turn
from novaberg.llm import reset_gateway

pytestmark = pytest.mark.django_db


def _chat_with_one_turn(api: APIClient) -> int:
    session_id: int = api.post("/api/sessions/", {}, format="json").json()["id"]
    api.post(
        f"/api/sessions/{session_id}/messages/", {"text": "Mein Hund heißt Bello."}, format="json"
    )
    return session_id


def _page(user: Any, url: str) -> str:
    browser = Client()
    browser.force_login(user)
    response = browser.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _online(settings: Any) -> None:
    settings.LLM_BASE_URL = "http://llm.intern.example:8000/v1"
    settings.LLM_MODEL = "qwen-test"
    reset_gateway()


def test_staff_sees_timings_the_inspector_link_and_the_model_endpoint(
    api: APIClient, user: Any, settings: Any
) -> None:
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    session_id = _chat_with_one_turn(api)
    asked = Turn.objects.get(session_id=session_id, role="user")
    _online(settings)
    html = _page(user, f"/chat/{session_id}/")
    assert f'href="/turns/{asked.pk}/">Ablauf</a>' in html
    assert f"erstes Wort nach {asked.ttft_ms} ms, fertig nach {asked.total_ms} ms" in html
    assert "qwen-test @ llm.intern.example:8000" in html
    assert 'id="dev-toggle"' in html and 'data-staff="1"' in html


def test_a_person_without_staff_rights_sees_no_developer_details(
    api: APIClient, user: Any, settings: Any
) -> None:
    session_id = _chat_with_one_turn(api)
    _online(settings)
    html = _page(user, f"/chat/{session_id}/")
    assert "Ablauf" not in html and "/turns/" not in html
    assert "erstes Wort nach" not in html
    assert "llm.intern.example" not in html and "qwen-test" not in html
    assert 'id="dev-toggle"' not in html and "data-staff" not in html
    # The header still says a model answers.
    assert re.search(r'id="backend-label" >Sprachmodell</span>', html)


def test_a_new_chat_shows_who_nova_is_offline_mode_and_three_example_prompts(
    user: Any, session: Session
) -> None:
    html = _page(user, f"/chat/{session.pk}/")
    assert "Hallo, ich bin Nova." in html
    assert "Offline-Modus" in html and "kein Sprachmodell angebunden" in html
    prompts = re.findall(r'class="example" data-prompt="([^"]+)"', html)
    assert len(prompts) == 3
    assert any("Ab sofort" in p for p in prompts)  # a rule
    assert any("Ordner" in p and "frei" in p for p in prompts)  # a folder release
    assert any(p.endswith("?") for p in prompts)  # a question about the folder


def test_a_chat_with_turns_shows_no_welcome(api: APIClient, user: Any) -> None:
    session_id = _chat_with_one_turn(api)
    assert "Hallo, ich bin Nova." not in _page(user, f"/chat/{session_id}/")


def test_a_stored_reply_is_shown_as_rendered_markdown_and_its_html_as_text(
    user: Any, session: Session
) -> None:
    asked = Turn.objects.create(session=session, role="user", text="Liste?", status="abgeschlossen")
    Turn.objects.create(
        session=session,
        role="assistant",
        reply_to=asked,
        status="abgeschlossen",
        text="**Fliesen** bestellen\n\n- Bad\n- Küche\n\n<img src=x onerror=alert(1)>",
    )
    html = _page(user, f"/chat/{session.pk}/")
    assert "<strong>Fliesen</strong> bestellen" in html
    assert "<li>Bad</li>" in html and "<li>Küche</li>" in html
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
