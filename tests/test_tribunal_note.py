"""The tribunal's verdict after the reply changes what the person sees (seed 000 §8.3, "Warne!"):
a violation the model finds, or a citation nobody delivered, becomes a German note under that
reply — a WebSocket frame after "done", on the page after a reload — and the next reply's
prompt carries it as [KORREKTUR] (after [REGELN], before [DIREKTIVEN], which stays last)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client

from conversation.models import Character, PipelineLog, Session, Turn
from conversation.pipeline import run_turn
from conversation.routing import websocket_urlpatterns
from directives import services
from tests.chat_requests import is_responder
from tests.factories import SessionFactory, UserFactory
from tests.fakes.openai_server import FakeOpenAI
from tests.fixtures import token_client

RULE = "Antworte immer in höchstens einem Satz"
VERDICT = json.dumps(
    {"verstoss": True, "verstoesse": [{"direktive": RULE, "grund": "drei Sätze"}]},
    ensure_ascii=False,
)
NOTE = f"Hinweis: Das verstößt gegen die Direktive: {RULE} (drei Sätze)."


def is_tribunal(body: dict[str, Any]) -> bool:
    return str(body["messages"][0]["content"]).startswith("Der Nutzer hat folgende Direktiven")


def responder_system(fake: FakeOpenAI) -> str:
    [body] = [r for r in fake.chat_requests() if is_responder(r)]
    return str(body["messages"][0]["content"])


@pytest.mark.django_db
def test_a_post_hoc_violation_is_noted_stored_and_corrected_in_the_next_prompt(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text=RULE)
    fake_llm.add("Gern. Der Tee ist fertig. Er ist noch heiß.", match=is_responder)
    fake_llm.add(VERDICT, match=is_tribunal)

    first = run_turn(user=user, character=session.character, session=session, text="Und?")

    assert first.note is not None and first.note["text"] == NOTE
    stored = Turn.objects.get(pk=first.turn_id).checks
    assert stored["hinweis"]["verstoesse"] == [f"{RULE} (drei Sätze)"]
    # Both texts are kept: the reply the person saw, and the verdict about it.
    assert Turn.objects.get(reply_to_id=first.turn_id).text == first.reply

    # The page after a reload shows the note under that reply.
    client = Client()
    client.force_login(user)
    page = client.get(f"/chat/{session.pk}/").content.decode()
    assert f'<p class="note" role="note">{NOTE}</p>' in page

    fake_llm.reset()
    fake_llm.add("Gut.", match=is_responder)
    second = run_turn(user=user, character=session.character, session=session, text="Danke.")
    system = responder_system(fake_llm)
    assert "[KORREKTUR]" in system
    assert f"- Sie verstieß gegen die Direktive: {RULE} (drei Sätze)" in system
    assert system.index("[REGELN]") < system.index("[KORREKTUR]") < system.index("[DIREKTIVEN]")
    # seed 000 §8.1: [DIREKTIVEN] stays the last block; the correction stands right before it.
    assert re.findall(r"^\[([A-Z_ ]+)\]$", system, re.MULTILINE)[-2:] == ["KORREKTUR", "DIREKTIVEN"]
    assert second.note is None  # the tribunal found nothing this time (unscripted: fallback)

    # Only the reply right before is corrected, not every later one.
    fake_llm.reset()
    fake_llm.add("Bitte.", match=is_responder)
    run_turn(user=user, character=session.character, session=session, text="Bis dann.")
    assert "[KORREKTUR]" not in responder_system(fake_llm)


@pytest.mark.django_db
def test_an_invented_citation_is_marked_under_the_reply(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    fake_llm.add("Laut notizen/erfunden.md:3-4 ist der Termin am Montag.", match=is_responder)

    result = run_turn(user=user, character=session.character, session=session, text="Termin?")

    assert result.note is not None
    assert result.note["zitate_ohne_beleg"] == ["notizen/erfunden.md:3-4"]
    assert "Die Quelle notizen/erfunden.md:3-4 wurde mir nicht vorgelegt" in result.note["text"]


@pytest.mark.django_db
def test_an_unreadable_model_verdict_falls_back_to_the_offline_checks_by_name(
    fake_llm: FakeOpenAI, session: Session, user: Any
) -> None:
    services.directive_create(user=user, text="Sprich nie von Milch")
    fake_llm.add("Tee ist gut.", match=is_responder)
    fake_llm.add("kein json", match=is_tribunal)

    result = run_turn(user=user, character=session.character, session=session, text="Und?")

    row = PipelineLog.objects.get(turn_id=result.turn_id, node="tribunal")
    assert row.outcome == "ersatz_offline"
    assert row.details["direktiven"]["details"]["step"] == "kein_json"
    assert result.note is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_note_arrives_as_a_frame_after_done(fake_llm: FakeOpenAI) -> None:
    from channels.layers import channel_layers

    channel_layers.backends.clear()  # this test's event loop gets its own Redis layer
    nova, _ = await sync_to_async(Character.objects.get_or_create)(name="Nova")
    user = await sync_to_async(UserFactory.create)(username="anna")
    session = await sync_to_async(SessionFactory.create)(user=user, character=nova)
    await sync_to_async(services.directive_create)(user=user, text=RULE)
    fake_llm.add("Gern. Der Tee ist fertig. Er ist noch heiß.", match=is_responder)
    fake_llm.add(VERDICT, match=is_tribunal)

    app = URLRouter(websocket_urlpatterns)  # type: ignore[arg-type]
    comm = WebsocketCommunicator(app, f"/ws/sessions/{session.pk}/")
    comm.scope["user"] = user  # type: ignore[typeddict-unknown-key]
    connected, _ = await comm.connect(timeout=10)
    assert connected
    try:
        await comm.send_json_to({"text": "Und?"})
        events: list[dict[str, Any]] = []
        while not events or events[-1]["type"] != "note":
            events.append(await comm.receive_json_from(timeout=30))
            assert events[-1]["type"] != "error", events[-1]
        kinds = [e["type"] for e in events]
        assert kinds.index("done") < kinds.index("note")
        done, note = events[kinds.index("done")], events[-1]
        assert note["turn_id"] == done["turn_id"]
        assert note["text"] == NOTE
    finally:
        await comm.disconnect()
        channel_layers.backends.clear()


@pytest.mark.django_db
def test_the_api_answer_carries_the_note(fake_llm: FakeOpenAI, session: Session, user: Any) -> None:
    fake_llm.add("Laut notizen/erfunden.md:9 ist es so.", match=is_responder)
    response = token_client(user).post(
        f"/api/sessions/{session.pk}/messages/", {"text": "Termin?"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["note"]["zitate_ohne_beleg"] == ["notizen/erfunden.md:9"]
