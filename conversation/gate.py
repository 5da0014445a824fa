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

from conversation import address
from conversation.agents import (
    AgentContext,
    AgentResult,
    AuditedAgent,
    ChoosingAgent,
    CorrectingAgent,
    WritingAgent,
    get_agent,
)
from conversation.consent import read_answer
from conversation.models import PendingQuestion
from conversation.vocabulary import ConsentOutcome, QuestionKind, QuestionStatus, Status

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
            status=QuestionStatus.OPEN,
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
    kind: QuestionKind = QuestionKind.YES_NO,
    text: str | None = None,
    step: str = "rueckfrage",
    data: dict[str, Any] | None = None,
) -> AgentResult:
    """Open a question; an older open question of the session is replaced, never executed."""
    if "(ID None)" in question:
        # seed 000 §6.1: "(ID None)" must never reach a person.
        raise ValueError("question shows an unresolved id")
    # The stored wording is the one the person sees: in the form of address her rules demand
    # (quoted rules and paths stay as written).
    question = address.for_person(question, user=ctx.user)
    text = address.for_person(text, user=ctx.user) if text else text
    PendingQuestion.objects.filter(
        user=ctx.user, session=ctx.session, status=QuestionStatus.OPEN
    ).update(status=QuestionStatus.REPLACED, answered_at=timezone.now())
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
    stored = PendingQuestion.objects.filter(pk=pending.pk, status=QuestionStatus.OPEN).exists()
    if not stored:
        return AgentResult(Status.FAILED, "Ich konnte die Rückfrage nicht speichern.", step="frage")
    result_data = {"pending_id": pending.pk, **(data or {})}
    return AgentResult(
        Status.QUESTION, text or question, step=step, question=question, data=result_data
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
            return AgentResult(
                Status.FAILED, "Ich finde diese Rückfrage nicht.", step="keine_frage"
            )
        if pending.status != QuestionStatus.OPEN:
            # A second answer racing the first: it saw the row only after the first committed.
            if pending.status == QuestionStatus.EXECUTED and pending.result:
                done = AgentResult.from_json(pending.result)
                done.step = "schon_ausgefuehrt"
                return done
            return AgentResult(Status.FAILED, ALREADY_TEXT, step="schon_beantwortet")
        if pending.is_expired:
            pending.status = QuestionStatus.EXPIRED
            pending.answered_at = timezone.now()
            pending.save(update_fields=["status", "answered_at"])
            return AgentResult(Status.FAILED, EXPIRED_TEXT, step="abgelaufen")

        agent = get_agent(pending.agent)
        if not isinstance(agent, WritingAgent):
            # Unregistered, or an agent that never asks (a read-only one cannot own a question).
            logger.error("gate: no writing agent %s for pending %s", pending.agent, pending.pk)
            return AgentResult(
                Status.FAILED, "Dieser Dienst ist nicht verfügbar.", step="kein_agent"
            )

        reading = read_answer(ctx.text, kind=QuestionKind(pending.kind))
        logger.info(
            "gate answer read",
            extra={"pending_id": pending.pk, "outcome": reading.outcome, "reason": reading.reason},
        )
        if reading.outcome != ConsentOutcome.CONSENT:
            _notify_answered(agent, ctx, pending, f"{reading.outcome}:{reading.reason}")
        if reading.outcome == ConsentOutcome.REFUSAL:
            pending.status = QuestionStatus.DISMISSED
            pending.answered_at = timezone.now()
            result = AgentResult(Status.DISMISSED, agent.dismissed_text, step="abgelehnt")
            pending.result = result.as_json()
            pending.save(update_fields=["status", "answered_at", "result"])
            return result
        if reading.outcome == ConsentOutcome.CONSENT:
            result = agent.execute(ctx, pending)
            pending.status = (
                QuestionStatus.EXECUTED if result.status == Status.DONE else QuestionStatus.FAILED
            )
            pending.answered_at = timezone.now()
            pending.result = result.as_json()
            pending.save(update_fields=["status", "answered_at", "result"])
            return result

    # Not consent and not refusal: correction, choice, or the same question again.
    if reading.correction and isinstance(agent, CorrectingAgent):
        corrected = agent.correct(ctx, pending, reading.correction)
        if corrected is not None:
            return corrected
    if pending.kind == QuestionKind.CHOICE and isinstance(agent, ChoosingAgent):
        chosen = agent.choose(ctx, pending)
        if chosen is not None:
            return chosen
    return ask_again(ctx, pending)


def _notify_answered(
    agent: WritingAgent, ctx: AgentContext, pending: PendingQuestion, outcome: str
) -> None:
    """An ``AuditedAgent`` hears of every answer for its audit trail (directives keep every
    step of a request). Runs in the gate's transaction; a failing hook is logged and never
    changes what the answer means."""
    if not isinstance(agent, AuditedAgent):
        return
    try:
        with transaction.atomic():
            agent.answered(ctx, pending, outcome)
    except Exception:
        logger.exception("gate: answered hook of %s failed", pending.agent)


def ask_again(ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
    step = "auswahl_offen" if pending.kind == QuestionKind.CHOICE else "unklar"
    with transaction.atomic():
        updated = PendingQuestion.objects.filter(pk=pending.pk, status=QuestionStatus.OPEN).update(
            asked_count=pending.asked_count + 1,
            expires_at=timezone.now() + timedelta(seconds=settings.PENDING_QUESTION_TTL_S),
        )
    if updated != 1:
        return AgentResult(Status.FAILED, ALREADY_TEXT, step="schon_beantwortet")
    return AgentResult(
        Status.QUESTION,
        pending.question,
        step=step,
        question=pending.question,
        data={"pending_id": pending.pk},
    )
