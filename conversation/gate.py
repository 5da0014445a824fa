"""The confirmation gate shared by every agent that writes (DESIGN.md "Agents and the gate").

``ask`` stores the exact wording the person saw as a ``PendingQuestion``; ``resume`` reads the
answer with the one consent reader and runs the agent's ``execute`` only on consent, inside one
transaction with the question row locked: the write and the question's ``ausgefuehrt`` state
commit together, so a repeated or racing answer never writes twice (idempotent, keyed by the
pending question).
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from conversation.agents import AgentContext, AgentResult, get_agent
from conversation.consent import read_answer
from conversation.models import PendingQuestion

logger = logging.getLogger(__name__)

EXPIRED_TEXT = (
    "Diese Rückfrage ist abgelaufen, deshalb habe ich nichts ausgeführt. "
    "Sag mir bitte noch einmal, was ich tun soll."
)
ALREADY_TEXT = "Diese Frage ist schon beantwortet; ich habe nichts ein zweites Mal ausgeführt."


def open_question(ctx: AgentContext) -> PendingQuestion | None:
    """The open question of this session (scoped to the person and character)."""
    return (
        PendingQuestion.objects.filter(
            user=ctx.user,
            character=ctx.character,
            session=ctx.session,
            status=PendingQuestion.Status.OPEN,
        )
        .order_by("-created_at")
        .first()
    )


@transaction.atomic
def ask(
    ctx: AgentContext,
    *,
    agent: str,
    question: str,
    payload: dict[str, Any],
    kind: str = PendingQuestion.Kind.YES_NO,
    text: str | None = None,
    step: str = "rueckfrage",
    data: dict[str, Any] | None = None,
) -> AgentResult:
    """Open a question; an older open question of the session is replaced, never executed."""
    if "(ID None)" in question:
        # seed 000 §6.1: "(ID None)" must never reach a person.
        raise ValueError("question shows an unresolved id")
    PendingQuestion.objects.filter(
        user=ctx.user, session=ctx.session, status=PendingQuestion.Status.OPEN
    ).update(status=PendingQuestion.Status.REPLACED, answered_at=timezone.now())
    pending = PendingQuestion.objects.create(
        user=ctx.user,
        character=ctx.character,
        session=ctx.session,
        agent=agent,
        kind=kind,
        question=question,
        payload=payload,
        expires_at=timezone.now() + timedelta(seconds=settings.PENDING_QUESTION_TTL_S),
    )
    # Read back: a question that is not stored cannot be answered later.
    stored = PendingQuestion.objects.filter(pk=pending.pk, status="offen").exists()
    if not stored:
        return AgentResult("fehler", "Ich konnte die Rückfrage nicht speichern.", step="frage")
    result_data = {"pending_id": pending.pk, **(data or {})}
    return AgentResult(
        "rueckfrage", text or question, step=step, question=question, data=result_data
    )


def resume(ctx: AgentContext, pending_id: int) -> AgentResult:
    """Read the person's answer to the open question ``pending_id`` and act on it."""
    with transaction.atomic():
        pending = (
            PendingQuestion.objects.select_for_update()
            .filter(pk=pending_id, user=ctx.user, session=ctx.session)
            .first()
        )
        if pending is None:
            return AgentResult("fehler", "Ich finde diese Rückfrage nicht.", step="keine_frage")
        if pending.status != PendingQuestion.Status.OPEN:
            # A second answer racing the first: it saw the row only after the first committed.
            if pending.status == PendingQuestion.Status.EXECUTED and pending.result:
                done = AgentResult.from_json(pending.result)
                done.step = "schon_ausgefuehrt"
                return done
            return AgentResult("fehler", ALREADY_TEXT, step="schon_beantwortet")
        if pending.is_expired:
            pending.status = PendingQuestion.Status.EXPIRED
            pending.answered_at = timezone.now()
            pending.save(update_fields=["status", "answered_at"])
            return AgentResult("fehler", EXPIRED_TEXT, step="abgelaufen")

        agent = get_agent(pending.agent)
        if agent is None:
            logger.error("gate: no agent %s for pending %s", pending.agent, pending.pk)
            return AgentResult("fehler", "Dieser Dienst ist nicht verfügbar.", step="kein_agent")

        reading = read_answer(ctx.text, kind=pending.kind)
        logger.info(
            "gate answer read",
            extra={"pending_id": pending.pk, "outcome": reading.outcome, "reason": reading.reason},
        )
        if reading.outcome != "consent":
            _notify_answered(agent, ctx, pending, f"{reading.outcome}:{reading.reason}")
        if reading.outcome == "refusal":
            pending.status = PendingQuestion.Status.DISMISSED
            pending.answered_at = timezone.now()
            result = AgentResult("dismissed", agent.dismissed_text, step="abgelehnt")
            pending.result = result.as_json()
            pending.save(update_fields=["status", "answered_at", "result"])
            return result
        if reading.outcome == "consent":
            result = agent.execute(ctx, pending)
            pending.status = (
                PendingQuestion.Status.EXECUTED
                if result.status == "abgeschlossen"
                else PendingQuestion.Status.FAILED
            )
            pending.answered_at = timezone.now()
            pending.result = result.as_json()
            pending.save(update_fields=["status", "answered_at", "result"])
            return result

    # Not consent and not refusal: correction, choice, or the same question again.
    correction = getattr(reading, "correction", None)
    if correction and hasattr(agent, "correct"):
        corrected = agent.correct(ctx, pending, correction)
        if corrected is not None:
            return corrected
    if pending.kind == PendingQuestion.Kind.CHOICE and hasattr(agent, "choose"):
        chosen = agent.choose(ctx, pending)
        if chosen is not None:
            return chosen
    return ask_again(ctx, pending)


def _notify_answered(agent: Any, ctx: AgentContext, pending: PendingQuestion, outcome: str) -> None:
    """Optional agent hook ``answered(ctx, pending, outcome)`` for its audit trail (directives
    keep every step of a request). Runs in the gate's transaction; a failing hook is logged and
    never changes what the answer means."""
    hook = getattr(agent, "answered", None)
    if hook is None:
        return
    try:
        with transaction.atomic():
            hook(ctx, pending, outcome)
    except Exception:
        logger.exception("gate: answered hook of %s failed", pending.agent)


def ask_again(ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
    step = "auswahl_offen" if pending.kind == PendingQuestion.Kind.CHOICE else "unklar"
    with transaction.atomic():
        updated = PendingQuestion.objects.filter(
            pk=pending.pk, status=PendingQuestion.Status.OPEN
        ).update(
            asked_count=pending.asked_count + 1,
            expires_at=timezone.now() + timedelta(seconds=settings.PENDING_QUESTION_TTL_S),
        )
    if updated != 1:
        return AgentResult("fehler", ALREADY_TEXT, step="schon_beantwortet")
    return AgentResult(
        "rueckfrage",
        pending.question,
        step=step,
        question=pending.question,
        data={"pending_id": pending.pk},
    )
