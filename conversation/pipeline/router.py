"""Node 2: which agent, if any, handles this message; otherwise plain conversation.

The router reads German order patterns that each agent exposes as ``detect`` (seed 000 §10:
imperatives with *nie, immer, ab jetzt, ab sofort*, bans with *nicht mehr, hör auf, lass das*).
Patterns are deterministic and cost no model call, so they serve both backends.
"""

from __future__ import annotations

from conversation.agents import all_agents
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState


def run(state: TurnState) -> TurnState:
    with node_log(state, "router") as log:
        if state.agent_result is not None:
            log.outcome = "antwort_auf_rueckfrage"
            log.details = {"route": state.route}
            return state
        for agent in all_agents():
            if agent.detect(state.text):
                state.route = agent.name
                break
        else:
            state.route = "gespraech"
        log.outcome = state.route
        log.details = {"route": state.route}
    return state
