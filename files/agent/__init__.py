"""The files agent: release, list, suspend, forget and reactivate roots by chat.

Every write goes through the confirmation gate and the one consent reader. A release asks two
questions: first who owns the material (a choice, which never executes), then yes/no on the
resolved path with its dry run.
"""

from __future__ import annotations

from conversation import gate
from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import QuestionKind, Status
from files import selectors
from files.agent import execute as execute_step
from files.agent.classify import classify, detect
from files.agent.validate import (
    describe_dry_run,
    human_size,
    owner_label,
    read_owner,
    validate_release,
    validate_root_action,
)
from files.models import FileRoot

STATE_LABELS: dict[str, str] = {
    FileRoot.State.ACTIVE: "aktiv",
    FileRoot.State.SUSPENDED: "stillgelegt",
    FileRoot.State.REQUESTED: "angefragt, noch nicht bestätigt",
}


class FilesAgent:
    name = "files"
    dismissed_text = "Gut, an deinen freigegebenen Ordnern ändert sich nichts."

    def detect(self, text: str) -> bool:
        return detect(text)

    def handle(self, ctx: AgentContext) -> AgentResult:
        order = classify(ctx.text)
        if order is None:
            return AgentResult(
                Status.FAILED, "Das habe ich nicht als Auftrag erkannt.", step="unklar"
            )
        if order.action == "list":
            return self.list_roots(ctx)
        if order.action == "release":
            checked = validate_release(user=ctx.user, character=ctx.character, order=order)
        else:
            checked = validate_root_action(user=ctx.user, character=ctx.character, order=order)
        if not checked.ok:
            return AgentResult(checked.status, checked.text, step=checked.step)
        kind = QuestionKind.CHOICE if order.action == "release" else QuestionKind.YES_NO
        return gate.ask(
            ctx, agent=self.name, question=checked.text, payload=checked.payload, kind=kind
        )

    def list_roots(self, ctx: AgentContext) -> AgentResult:
        roots = list(selectors.root_list(user=ctx.user, character=ctx.character))
        if not roots:
            return AgentResult(
                Status.DONE, "Du hast mir noch keinen Ordner freigegeben.", step="liste"
            )
        lines = ["Diese Ordner hast du mir freigegeben:"]
        for root in roots:
            lines.append(
                f"- {root.path} ({STATE_LABELS.get(root.state, root.state)}, "
                f"{owner_label(root.eigentum)}): {root.present_count} "
                f"{'Datei' if root.present_count == 1 else 'Dateien'} im Index"
                + (f", {root.gone_count} fort" if root.gone_count else "")
            )
        return AgentResult(
            Status.DONE,
            "\n".join(lines),
            step="liste",
            data={"roots": [r.pk for r in roots]},
        )

    def choose(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult | None:
        """The owner answer turns the choice into a yes/no question (never a write)."""
        eigentum = read_owner(ctx.text)
        if eigentum is None:
            return None
        payload = {**pending.payload, "eigentum": eigentum}
        dry = dict(payload.get("dry_run") or {})
        question = (
            f"Soll ich {payload['path']} als {owner_label(eigentum)} freigeben? "
            f"{dry.get('files', 0)} {'Datei' if dry.get('files', 0) == 1 else 'Dateien'} "
            f"({human_size(int(dry.get('total_bytes', 0)))}) "
            "würde ich lesen, ohne darin etwas zu verändern. (ja/nein)"
        )
        return gate.ask(ctx, agent=self.name, question=question, payload=payload)

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        return execute_step.execute(ctx, pending)


__all__ = ["FilesAgent", "describe_dry_run"]
