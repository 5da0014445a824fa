"""A turn that runs out of time still asks the open question again: the reminder needs no
model. Found against a small local model, where a garbage answer to "Soll ich das so machen?"
ended at the turn's deadline and the question was gone from the chat."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import Session
from directives.models import Directive
from directives.tests.helpers import say
from novaberg.llm import get_gateway
from tests.fakes.openai_server import FakeOpenAI

pytestmark = pytest.mark.django_db

QUESTION_END = "Soll ich das so machen?"


def test_a_turn_cut_by_its_deadline_still_repeats_the_open_question(
    fake_llm: FakeOpenAI, api: APIClient, session: Session, settings: Any
) -> None:
    fake_llm.set_default("Quatsch ohne Form.")  # the nodes fall back to Offline-Modus
    asked = say(api, session, "Sieze mich ab jetzt immer.")
    assert asked["status"] == "rueckfrage" and QUESTION_END in asked["question"]

    # The next message is no answer, and the model now never finishes.
    get_gateway().chat([{"role": "user", "content": "Hallo"}], purpose="composer")
    settings.TURN_TOTAL_S = 1.0
    settings.LLM_TIMEOUT_S = 30.0
    fake_llm.add("endlos ", endless=True, times=50)
    cut = say(api, session, "Wie spät ist es jetzt?")

    assert cut["step"] == "zeitlimit_zug"
    assert QUESTION_END in cut["reply"]
    assert cut["reply"].index("abgebrochen") < cut["reply"].index(QUESTION_END)
    assert not Directive.objects.filter(user=session.user).exists()
