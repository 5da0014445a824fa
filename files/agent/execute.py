"""Step 3 of the files agent: run the consented action and say what was done (verified by the
services, which read every write back)."""

from __future__ import annotations

from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import Status
from files import services
from files.agent.validate import describe_dry_run, owner_label
from novaberg.api_errors import ApplicationError, ErrorStatus


def execute(ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
    payload = dict(pending.payload or {})
    action = payload.get("action")
    try:
        if action == "release":
            eigentum = str(payload.get("eigentum", ""))
            root = services.root_release(
                user=ctx.user,
                character=ctx.character,
                raw_path=str(payload.get("path", "")),
                eigentum=eigentum,
            )
            return AgentResult(
                Status.DONE,
                f"Freigegeben: {root.path} als {owner_label(eigentum)}. "
                f"{describe_dry_run(root.path, root.dry_run)} Ich lese den Ordner jetzt ein, "
                "ohne darin etwas zu verändern.",
                step="freigegeben",
                data={"root_id": root.pk, "path": root.path},
            )
        root_id = int(payload.get("root_id", 0))
        if action == "suspend":
            root = services.root_suspend(user=ctx.user, root_id=root_id)
            return AgentResult(
                Status.DONE,
                f"Stillgelegt: {root.path}. Ich lese ihn nicht mehr und suche nicht mehr darin.",
                step="stillgelegt",
                data={"root_id": root.pk},
            )
        if action == "reactivate":
            root = services.root_reactivate(user=ctx.user, root_id=root_id)
            return AgentResult(
                Status.DONE,
                f"Wieder aufgenommen: {root.path}. Ich lese ihn jetzt wieder ein.",
                step="wieder_aufgenommen",
                data={"root_id": root.pk},
            )
        if action == "forget":
            report = services.root_forget(user=ctx.user, root_id=root_id)
            return AgentResult(
                Status.DONE,
                f"Vergessen: {report.path}. {report.entries} Indexzeilen mit ihren "
                "Zusammenfassungen und Einbettungen sind gelöscht; die Dateien sind unberührt.",
                step="vergessen",
                data={"entries": report.entries},
            )
    except ApplicationError as exc:
        refused = exc.status == ErrorStatus.REFUSED
        return AgentResult(
            Status.REJECTED if refused else Status.FAILED, exc.message, step=exc.step
        )
    return AgentResult(
        Status.FAILED, "Diese Rückfrage kann ich nicht ausführen.", step="aktion_unbekannt"
    )
