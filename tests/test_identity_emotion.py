"""[IDENTITAET] from the character sheet (editable in the admin) and [EIGENE_EMOTION] derived
from the conversation vector and the last turns, as the responder receives them."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from conversation.models import DEFAULT_CHARACTER_SHEET, Character, Session
from conversation.pipeline import run_turn
from tests.chat_requests import is_vector
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db


def responder_block(fake: FakeOpenAI, name: str) -> str:
    found = [
        r for r in fake.chat_requests() if r["messages"][0]["content"].startswith("[IDENTITAET]")
    ]
    system = found[-1]["messages"][0]["content"]
    match = re.search(rf"^\[{name}\]\n(.*?)(?=\n\n\[|\Z)", system, re.M | re.S)
    assert match, system
    return match.group(1)


def test_the_character_sheet_edited_in_the_admin_reaches_identity(
    fake_llm: FakeOpenAI, session: Session, user: User, client: Client
) -> None:
    nova = session.character
    assert nova.sheet == DEFAULT_CHARACTER_SHEET  # a German default for existing characters
    admin = User.objects.create_superuser("chef", password="geheim-123")
    client.force_login(admin)
    url = reverse("admin:conversation_character_change", args=[nova.pk])
    assert 'name="sheet"' in client.get(url).content.decode()
    sheet = "Wesen: gelassen wie ein See.\nHumor: liebt Wortspiele mit Gemüse."
    answer = client.post(
        url,
        {
            "name": nova.name,
            "identity": nova.identity,
            "sheet": sheet,
            "communication": nova.communication,
        },
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert Character.objects.get(pk=nova.pk).sheet == sheet

    session.character.refresh_from_db()
    run_turn(user=user, character=session.character, session=session, text="Hallo!")
    identity = responder_block(fake_llm, "IDENTITAET")
    assert identity.startswith(f"Du bist {nova.name}.")
    assert "Humor: liebt Wortspiele mit Gemüse." in identity


def test_emotion_follows_the_vector_and_the_last_turns(
    fake_llm: FakeOpenAI, session: Session, user: User
) -> None:
    fake_llm.set_default("Ok.")
    run_turn(user=user, character=session.character, session=session, text="Hallo!")
    first = responder_block(fake_llm, "EIGENE_EMOTION")
    assert "Das Gespräch beginnt gerade" in first

    fake_llm.add(
        json.dumps(
            {
                "strategie": "begleiten",
                "absicht": "emotional",
                "vehikel": "aussage",
                "impuls": "Der Nutzer ist traurig.",
            }
        ),
        match=is_vector,
    )
    run_turn(
        user=user,
        character=session.character,
        session=session,
        text="Ich bin heute so traurig, mein Kater ist krank.",
    )
    sad = responder_block(fake_llm, "EIGENE_EMOTION")
    assert "berührt" in sad and "geht dir nahe" in sad
    assert "beginnt gerade" not in sad
    assert sad != first
