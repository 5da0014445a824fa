"""Execute a confirmed order (seed 000 §7): one write per answer, verified by reading back.

Runs inside the gate's transaction with the PendingQuestion row locked; the services are also
idempotent by ``pending_id`` (a resumed or repeated answer never writes twice).
"""

from __future__ import annotations

import logging
from typing import Any

from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import Status
from directives import services
from directives.agent.validate import UNCHANGED
from directives.blocks import budget_note
from directives.models import DirectiveStep

logger = logging.getLogger(__name__)


def _done_text(action: str, payload: dict[str, Any], outcome: services.WriteOutcome) -> str:
    text = outcome.directive.text if outcome.directive is not None else payload.get("text", "")
    if action == "create":
        return f"Erledigt: Ab jetzt gilt die Direktive '{text}'."
    if action == "update":
        return f"Erledigt: Statt '{payload.get('old_text', '')}' gilt jetzt '{text}'."
    if action == "delete" and payload.get("directive_ids"):
        listed = ", ".join(f"'{t}'" for t in payload.get("texts") or [])
        return f"Erledigt: Diese Direktiven gelten nicht mehr: {listed}."
    if action == "delete":
        return f"Erledigt: Die Direktive '{text}' gilt nicht mehr."
    if action == "reactivate":
        return f"Erledigt: Die Direktive '{text}' gilt wieder."
    return "Erledigt: Die letzte Änderung ist rückgängig gemacht."


def _write(ctx: AgentContext, payload: dict[str, Any], pending_id: int) -> services.WriteOutcome:
    action = payload.get("action")
    common: dict[str, Any] = {
        "user": ctx.user,
        "source": "chat",
        "request_id": payload.get("request_id"),
        "pending_id": pending_id,
    }
    if action == "create":
        return services.directive_create(
            text=str(payload.get("text", "")), context=str(payload.get("context") or ""), **common
        )
    if action == "update":
        return services.directive_update(
            directive_id=int(payload["directive_id"]), text=str(payload.get("text", "")), **common
        )
    if action == "delete" and "directive_ids" in payload:
        return services.directive_deactivate_many(
            directive_ids=[int(i) for i in payload["directive_ids"]], **common
        )
    if action == "delete":
        return services.directive_deactivate(directive_id=int(payload["directive_id"]), **common)
    if action == "reactivate":
        return services.directive_reactivate(directive_id=int(payload["directive_id"]), **common)
    if action == "undo":
        return services.directive_undo(
            deactivate=[int(i) for i in payload.get("deactivate", [])],
            activate=[int(i) for i in payload.get("activate", [])],
            **common,
        )
    return services.WriteOutcome(False, "aktion_unbekannt", f"unbekannte Aktion {action!r}")


def execute(ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
    payload = dict(pending.payload or {})
    action = str(payload.get("action", ""))
    services.step_record(
        user=ctx.user,
        request_id=str(payload.get("request_id") or ""),
        step=DirectiveStep.Step.ANSWERED,
        action=action,
        outcome="zustimmung",
        pending_id=pending.pk,
        details={"answer": ctx.text[:200]},
    )
    try:
        outcome = _write(ctx, payload, pending.pk)
    except (KeyError, TypeError, ValueError) as exc:
        # A malformed payload is a bug, but it must end named, with nothing written.
        logger.exception("directives execute: bad payload for pending %s", pending.pk)
        outcome = services.WriteOutcome(False, "auftrag_unlesbar", str(exc)[:200])
    if outcome.step == "schon_vorhanden":
        # Another session (or the API) wrote the same rule after this question was asked: the
        # person's wish holds already, nothing is written twice.
        return AgentResult(
            Status.DONE,
            f"{outcome.reason} {UNCHANGED}",
            step="schon_vorhanden",
            data={"action": action},
        )
    if not outcome.ok:
        return AgentResult(
            Status.FAILED,
            f"Das konnte ich nicht bestätigt speichern: {outcome.reason} {UNCHANGED}",
            step=outcome.step,
            data={"action": action},
        )
    text = _done_text(action, payload, outcome)
    note = budget_note(user=ctx.user)
    if note:
        text = f"{text} {note}"
    return AgentResult(
        Status.DONE,
        text,
        step="schon_ausgefuehrt" if outcome.step == "schon_ausgefuehrt" else "ausgefuehrt",
        data={
            "action": action,
            "directive_id": outcome.directive.pk if outcome.directive is not None else None,
            "touched": outcome.touched,
            "over_budget": bool(note),
        },
    )
