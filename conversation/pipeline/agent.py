"""Node 3: the routed agent produces the result for [AUFGABE] (it may open a question)."""

from __future__ import annotations

import logging

from conversation.agents import AgentResult, get_agent
from conversation.pipeline import fallback
from conversation.pipeline.logging import node_log
from conversation.pipeline.pending import agent_context
from conversation.pipeline.state import TurnState
from conversation.vocabulary import NodeOutcome, Status

logger = logging.getLogger(__name__)


def run(state: TurnState) -> TurnState:
    with node_log(state, "agent") as log:
        if state.agent_result is not None:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        agent = get_agent(state.route)
        if agent is None:
            log.outcome = "kein_agent"
            return state
        try:
            result = agent.handle(agent_context(state))
        except Exception as exc:
            # An agent bug must not end the turn in a traceback: it is a named failure.
            logger.exception("agent %s crashed", agent.name)
            result = AgentResult(
                Status.FAILED,
                "Dabei ist bei mir etwas schiefgegangen; es wurde nichts geändert.",
                step="agent_absturz",
                data={"error": f"{type(exc).__name__}: {exc}"[:300]},
            )
        state.agent_result = result
        log.outcome = result.step or result.status
        log.details = {"agent": agent.name, "status": result.status, "step": result.step}
        if result.data.get(fallback.FALLBACK_KEY):
            # The agent's model answer was replaced by its offline implementation (named there).
            keys = (fallback.FALLBACK_KEY, fallback.FAULT_KEY, fallback.STEP_KEY)
            log.details.update({k: result.data[k] for k in keys if k in result.data})
    return state
