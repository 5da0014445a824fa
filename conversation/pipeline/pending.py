"""Node 1: an open confirmation question in this session? Then this message is its answer —
unless it is clearly something else.

A message that is a question or a new order (an agent's pattern) is not swallowed by the open
question: the pending action is never executed by it (the consent reader would not read it as
consent anyway), the question stays open, the message is routed as usual, and at the end of the
reply the open question is asked again ("Und zu vorhin: …", see ``remind``) until it is
answered, replaced or expired. A refusal that carries a new order ("Nein, nenn mich lieber
Chef") dismisses the old question and routes the order, which gets its own question.
"""

from __future__ import annotations

import re

from conversation import gate
from conversation.agents import AgentContext, all_agents
from conversation.consent import read_answer
from conversation.models import PendingQuestion
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.vocabulary import ConsentOutcome, QuestionKind, QuestionStatus

REMINDER_LEAD = "Und zu vorhin:"
_REFUSAL_LEAD_RE = re.compile(
    r"^\W*(?:nein|nee|nö|noe|ne|nope|lieber\s+nicht|doch\s+nicht|auf\s+keinen\s+fall)\b"
    r"(?:\s*,?\s*(?:danke|doch|lieber|besser|aber|sondern))*\W*",
    re.IGNORECASE,
)


def agent_context(state: TurnState) -> AgentContext:
    return AgentContext(
        user=state.user,
        character=state.character,
        session=state.session,
        text=state.text,
        turn_id=state.turn.pk,
        history=state.history,
    )


def is_order(text: str) -> bool:
    return bool(text.strip()) and any(agent.detect(text) for agent in all_agents())


def is_other_message(text: str) -> bool:
    """Clearly not an answer to the open question: a question of its own (three words or more;
    "Wie bitte?" or "Ja?" still ask the question again), or an order of some agent."""
    if "?" in text and len(re.findall(r"\w+", text)) >= 3:
        return True
    return is_order(text)


def order_after_refusal(text: str) -> str | None:
    """ "Nein, nenn mich lieber Chef" → "nenn mich lieber Chef"; None without a new order."""
    match = _REFUSAL_LEAD_RE.match(text)
    if match is None or match.end() == 0:
        return None
    rest = text[match.end() :].strip()
    if len(rest.split()) < 2 or not is_order(rest):
        return None
    return rest[:1].upper() + rest[1:]


def run(state: TurnState) -> TurnState:
    with node_log(state, "pending") as log:
        ctx = agent_context(state)
        pending = gate.open_question(ctx)
        if pending is None:
            log.outcome = "keine_offene_frage"
            return state
        reading = read_answer(state.text, kind=QuestionKind(pending.kind))
        if reading.outcome == ConsentOutcome.REFUSAL:
            order = order_after_refusal(state.text)
            if order is not None:
                # The refusal answers the old question; the order is a message of its own.
                dismissed = gate.resume(ctx, pending.pk)
                state.text = order
                log.outcome = "abgelehnt_neuer_auftrag"
                log.details = {
                    "pending_id": pending.pk,
                    "agent": pending.agent,
                    "status": dismissed.status,
                    "order": order[:200],
                }
                return state
        elif (
            reading.outcome == ConsentOutcome.UNCLEAR
            and reading.correction is None  # "ja, aber sag 'Boss'" answers the question
            and is_other_message(state.text)
        ):
            # Not an answer: the question stays open and is asked again after the reply.
            state.extra["reminder_pending_id"] = pending.pk
            log.outcome = "andere_nachricht"
            log.details = {"pending_id": pending.pk, "agent": pending.agent}
            return state
        result = gate.resume(ctx, pending.pk)
        state.route = pending.agent
        state.agent_result = result
        log.outcome = result.step or result.status
        log.details = {"pending_id": pending.pk, "agent": pending.agent, "status": result.status}
    return state


def remind(state: TurnState) -> TurnState:
    """Last node: the open question that this message did not answer is asked again."""
    pending_id = state.extra.get("reminder_pending_id")
    if not pending_id or state.failed:
        return state
    with node_log(state, "erinnerung") as log:
        pending = PendingQuestion.objects.filter(
            pk=pending_id, user=state.user, session=state.session, status=QuestionStatus.OPEN
        ).first()
        if pending is None or pending.is_expired:
            # Replaced by the new message's own question, or expired meanwhile.
            log.outcome = "keine_offene_frage"
            return state
        suffix = f"\n\n{REMINDER_LEAD} {pending.question}"
        state.reply = f"{state.reply.rstrip()}{suffix}" if state.reply.strip() else suffix.strip()
        if state.on_token is not None:
            state.on_token(suffix)
        if state.agent_result is None:
            state.question = pending.question
        log.outcome = "erinnert"
        log.details = {"pending_id": pending.pk}
    return state
