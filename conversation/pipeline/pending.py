"""Node 1: an open confirmation question in this session? Then this message is its answer."""

from __future__ import annotations

from conversation import gate
from conversation.agents import AgentContext
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState


def agent_context(state: TurnState) -> AgentContext:
    return AgentContext(
        user=state.user,
        character=state.character,
        session=state.session,
        text=state.text,
        turn_id=state.turn.pk,
        history=state.history,
    )


def run(state: TurnState) -> TurnState:
    with node_log(state, "pending") as log:
        ctx = agent_context(state)
        pending = gate.open_question(ctx)
        if pending is None:
            log.outcome = "keine_offene_frage"
            return state
        result = gate.resume(ctx, pending.pk)
        state.route = pending.agent
        state.agent_result = result
        log.outcome = result.step or result.status
        log.details = {"pending_id": pending.pk, "agent": pending.agent, "status": result.status}
    return state
