"""Node: the memory write — the person's statements as short-term memory (with the ONE turn
vector), record-based answers only with their provenance; recalled memories gain salience and
may be promoted to long-term memory. A failed turn stores nothing."""

from __future__ import annotations

from conversation import context, memory
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState


def run(state: TurnState) -> TurnState:
    with node_log(state, "gedaechtnis") as log:
        if state.failed:
            log.outcome = "nicht_gespeichert_fehler"
            return state
        if state.agent_result is not None:
            # An order or an answer to a question restates a directive or a root: not a memory.
            log.outcome = "aufgabe_nicht_gespeichert"
            return state
        if state.query_vector is None:
            log.outcome = "kein_vektor"
            return state
        promoted = memory.memory_recall(
            user=state.user, character=state.character, ids=[m["id"] for m in state.memories]
        )
        extraction = memory.memory_extract(
            person_text=state.text,
            reply=state.reply,
            records=context.delivered_records(state.blocks, state.found),
            blocks=state.blocks,
            recalled=state.memories,
        )
        stored = memory.memory_store(
            user=state.user,
            character=state.character,
            session=state.session,
            turn=state.turn,
            candidates=extraction.candidates,
            vector=state.query_vector,
        )
        log.outcome = "gespeichert" if stored else "nichts_gespeichert"
        log.details = {
            "gespeichert": stored,
            "uebersprungen": extraction.skipped,
            "erinnert": len(state.memories),
            "befoerdert": promoted,
        }
    return state
