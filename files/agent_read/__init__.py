"""The request-path files agent: reads on request ("Was steht in meinen Notizen über X?")."""

from __future__ import annotations

from conversation.agents import AgentContext, AgentResult
from conversation.vocabulary import Status
from files.agent_read.classify import classify
from files.agent_read.execute import run


class FilesReadAgent:
    """Read-only: it never asks, so the gate never resumes it (``conversation.agents.Agent``)."""

    name = "dateien_lesen"

    def detect(self, text: str) -> bool:
        return classify(text) is not None

    def handle(self, ctx: AgentContext) -> AgentResult:
        request = classify(ctx.text)
        if request is None:
            return AgentResult(
                Status.FAILED, "Was soll ich in deinen Dateien lesen?", step="unklar"
            )
        return run(ctx, request)


files_read_agent = FilesReadAgent()
