"""The request-path files agent: reads on request ("Was steht in meinen Notizen über X?")."""

from __future__ import annotations

from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from files.agent_read.classify import classify
from files.agent_read.execute import run


class FilesReadAgent:
    name = "dateien_lesen"
    dismissed_text = "Ich habe nichts gelesen."

    def detect(self, text: str) -> bool:
        return classify(text) is not None

    def handle(self, ctx: AgentContext) -> AgentResult:
        request = classify(ctx.text)
        if request is None:
            return AgentResult("fehler", "Was soll ich in deinen Dateien lesen?", step="unklar")
        return run(ctx, request)

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        # Reading never asks for confirmation, so there is nothing to execute.
        return AgentResult("fehler", "Hier gibt es nichts zu bestätigen.", step="keine_rueckfrage")


files_read_agent = FilesReadAgent()
