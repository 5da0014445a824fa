"""With "Sieze mich" active, Nova's own texts say "Sie" too: the refusals of a message, the
crash sentence, the stored confirmation question, the WebSocket's error texts, the chat page's
headings and placeholder (``siezen``) — and without the rule they stay in du-form."""

from __future__ import annotations

import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client

from conversation import gate
from conversation.agents import AgentContext
from conversation.models import Character, PendingQuestion, Session
from conversation.pipeline import run_turn, runner
from conversation.pipeline.state import TurnState
from conversation.routing import websocket_urlpatterns
from directives import services
from tests.factories import SessionFactory, UserFactory
from tests.fixtures import token_client

DU = re.compile(r"\b(du|dich|dir|dein\w*|schreib|schick|teil|entschuldige)\b", re.IGNORECASE)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "sie"),
    [
        pytest.param("   ", "Ihre Nachricht ist leer – schreiben Sie mir bitte etwas.", id="leer"),
        pytest.param(
            "Hallo\x07",
            "Ihre Nachricht enthält Steuerzeichen, die ich nicht lesen kann. "
            "Schicken Sie sie bitte ohne diese Zeichen noch einmal.",
            id="steuerzeichen",
        ),
    ],
)
def test_a_refused_message_is_answered_in_sie_form(
    session: Session, user: Any, text: str, sie: str
) -> None:
    services.directive_create(user=user, text="Sieze mich immer")
    received: list[str] = []
    result = run_turn(
        user=user, character=session.character, session=session, text=text, on_token=received.append
    )
    assert result.reply == sie
    assert "".join(received) == sie


@pytest.mark.django_db
def test_without_the_rule_the_refusal_stays_du(session: Session, user: Any) -> None:
    result = run_turn(user=user, character=session.character, session=session, text="  ")
    assert result.reply == "Deine Nachricht ist leer – schreib mir bitte etwas."


@pytest.mark.django_db
def test_the_crash_sentence_says_sie(
    session: Session, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    services.directive_create(user=user, text="Sieze mich immer")

    def crash(state: TurnState) -> TurnState:
        raise RuntimeError("kaputt")

    monkeypatch.setattr(runner, "NODES", [runner.NODES[0], crash, *runner.NODES[2:]])
    result = run_turn(user=user, character=session.character, session=session, text="Hallo")
    assert result.reply == (
        "Entschuldigen Sie, da ist bei mir etwas schiefgegangen. Ihre Nachricht ist gespeichert."
    )


@pytest.mark.django_db
def test_the_stored_question_is_the_sie_wording_the_person_sees(
    session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sieze mich immer")
    ctx = AgentContext(user=user, character=session.character, session=session, text="x")
    result = gate.ask(
        ctx,
        agent="files",
        question="Gehören die Unterlagen dir? Antworte mit „meine“ oder „Novas“.",
        payload={},
    )
    expected = "Gehören die Unterlagen Ihnen? Antworten Sie mit „meine“ oder „Novas“."
    assert result.question == expected
    assert PendingQuestion.objects.get(session=session).question == expected


@pytest.mark.django_db
def test_the_chat_page_says_sie_with_the_rule(session: Session, user: Any) -> None:
    client = Client()
    client.force_login(user)
    before = client.get(f"/chat/{session.pk}/").content.decode()
    assert "Deine Regeln" in before and "Schreib Nova" in before

    services.directive_create(user=user, text="Sieze mich immer")
    page = client.get(f"/chat/{session.pk}/").content.decode()
    assert "Ihre Regeln" in page and "Schreiben Sie Nova …" in page
    welcome = page[page.index('id="welcome"') : page.index("</ul>", page.index('id="welcome"'))]
    assert "Ich bin Ihre Begleiterin" in welcome and "Probieren Sie zum Beispiel" in welcome
    visible = re.sub(r'data-prompt="[^"]*"|„[^“]*“', "", welcome)
    assert not DU.search(visible), DU.search(visible)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_websocket_error_text_says_sie() -> None:
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    nova, _ = await sync_to_async(Character.objects.get_or_create)(name="Nova")
    user = await sync_to_async(UserFactory.create)(username="anna")
    session = await sync_to_async(SessionFactory.create)(user=user, character=nova)
    await sync_to_async(services.directive_create)(user=user, text="Sieze mich immer")
    app = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
    comm = WebsocketCommunicator(app, f"/ws/sessions/{session.pk}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]
    connected, _ = await comm.connect(timeout=10)
    assert connected
    try:
        await comm.send_to(bytes_data=b"\x00")
        event = await comm.receive_json_from(timeout=10)
        sie = "Ich verstehe nur Textnachrichten – bitte schicken Sie Ihre Nachricht als Text."
        assert event == {"type": "error", "text": sie}
    finally:
        await comm.disconnect()
        channel_layers.backends.clear()


@pytest.mark.django_db
def test_the_api_refusal_says_sie(session: Session, user: Any) -> None:
    services.directive_create(user=user, text="Sieze mich immer")
    response = token_client(user).post(
        f"/api/sessions/{session.pk}/messages/", {"text": "  "}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["detail"] == "Ihre Nachricht ist leer – schreiben Sie mir bitte etwas."
