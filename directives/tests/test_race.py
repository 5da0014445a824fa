"""Two answers racing for one pending question: the row lock lets only one execute."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from conversation import gate
from conversation.agents import AgentContext
from conversation.models import Character, PendingQuestion, Session
from directives.agent.agent import DirectivesAgent
from directives.agent.validate import Proposal
from directives.models import Directive
from tests.factories import SessionFactory, UserFactory


@pytest.mark.django_db(transaction=True)
def test_two_racing_answers_execute_once() -> None:
    nova = Character.objects.get(name="Nova")  # tests/fixtures.py restores her after a flush
    user = UserFactory.create(username="anna")
    session: Session = SessionFactory.create(user=user, character=nova)
    ctx = AgentContext(user=user, character=session.character, session=session, text="ja")
    asked = DirectivesAgent()._ask(
        ctx,
        Proposal(
            "create",
            "Ich soll die Direktive 'Sprich nie von Milch' anlegen. Soll ich das so machen?",
            {"action": "create", "request_id": "race", "text": "Sprich nie von Milch"},
        ),
    )
    pending_id = asked.data["pending_id"]
    barrier = threading.Barrier(2)
    results: list[Any] = []
    errors: list[BaseException] = []

    def answer() -> None:
        try:
            barrier.wait(5)
            results.append(gate.resume(ctx, pending_id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)

    assert not errors
    assert Directive.objects.filter(user=user).count() == 1
    steps = sorted(r.step for r in results)
    assert steps == ["ausgefuehrt", "schon_ausgefuehrt"]
    assert all(r.status == "abgeschlossen" for r in results)
    assert PendingQuestion.objects.get(pk=pending_id).status == "ausgefuehrt"
