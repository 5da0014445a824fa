"""The knowledge chat agent: her own library by chat ("Was weißt du über X in deinem Wissen?",
"Lösch den Absatz über X aus deinem Wissen", "Lies dir brennen.md durch und merk dir das
Wichtigste"). Routing rules: ``knowledge.agent.classify``."""

from __future__ import annotations

from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import Status
from knowledge.agent.classify import classify
from knowledge.agent.execute import AGENT_NAME, ask_library, delete_ask, delete_execute, learn


class KnowledgeAgent:
    """A writing agent: deleting asks through the gate first (``conversation.agents``)."""

    name = AGENT_NAME
    dismissed_text = "An meinem Wissen ist nichts geändert."

    def detect(self, text: str) -> bool:
        return classify(text) is not None

    def handle(self, ctx: AgentContext) -> AgentResult:
        request = classify(ctx.text)
        if request is None:
            return AgentResult(
                Status.FAILED, "Was soll ich in meinem Wissen nachsehen?", step="unklar"
            )
        if request.kind == "lernen":
            return learn(ctx, request)
        if request.kind == "loeschen":
            return delete_ask(ctx, request)
        return ask_library(ctx, request)

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        action = (pending.payload or {}).get("action")
        if action == "absatz_loeschen":
            return delete_execute(ctx, pending)
        return AgentResult(Status.FAILED, "Diese Rückfrage kenne ich nicht.", step="unklar")


knowledge_agent = KnowledgeAgent()
