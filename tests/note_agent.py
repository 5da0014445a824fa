"""A tiny agent that asks before it 'writes', for tests of the confirmation path (the gate
executes what the person saw). Used by tests/test_pipeline.py and, inside daphne, by the
browser test's ASGI app."""

from __future__ import annotations

from conversation import gate
from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import Status


class NoteAgent:
    name = "testnotiz"
    dismissed_text = "An deinen Notizen ist nichts geändert."

    def detect(self, text: str) -> bool:
        return text.startswith("Merke dir:")

    def handle(self, ctx: AgentContext) -> AgentResult:
        note = ctx.text.removeprefix("Merke dir:").strip()
        return gate.ask(
            ctx,
            agent=self.name,
            question=f"Soll ich mir „{note}“ als Notiz merken? (ja/nein)",
            payload={"note": note},
        )

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        return AgentResult(Status.DONE, f"Erledigt: „{pending.payload['note']}“ ist notiert.")
