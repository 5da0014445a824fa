"""Node: ONE query vector per turn (such_vektor), reused by every source.

Memory ([GEDAECHTNIS]) and the file index ([AUFZEICHNUNGEN]) are searched with the same vector;
the memory write later stores the person's words with it too. Embedding the same text twice
would cost time and lose the shared "gravity" of one vector (seed 002 §3.0).
"""

from __future__ import annotations

import logging
import time

from conversation import memory
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from files import retrieval
from novaberg import embeddings

logger = logging.getLogger(__name__)


def run(state: TurnState) -> TurnState:
    with node_log(state, "enricher") as log:
        if state.asks:
            log.outcome = "uebersprungen_rueckfrage"
            return state
        if state.agent_result is not None:
            # On the task path the content is the agent's result; no memory or records.
            log.outcome = "uebersprungen_aufgabe"
            return state
        t0 = time.perf_counter()
        try:
            state.query_vector = embeddings.embed_one(state.text)
        except embeddings.EmbeddingError as exc:
            # Without a vector there is no memory and no records this turn; the turn goes on.
            log.outcome = f"einbettung_{exc.step}"
            log.details = {"error": str(exc)[:300]}
            return state
        embed_ms = int((time.perf_counter() - t0) * 1000)

        t1 = time.perf_counter()
        state.memories = memory.memory_search(
            user=state.user,
            character=state.character,
            vector=state.query_vector,
            exclude_turn_ids=state.extra.get("history_turn_ids", []),
        )
        memory_ms = int((time.perf_counter() - t1) * 1000)

        t2 = time.perf_counter()
        files_log: dict[str, object] = {}
        try:
            found = retrieval.records_for_turn(
                user=state.user,
                character=state.character,
                query_vector=state.query_vector,
                text=state.text,
            )
            state.records = [dict(r) for r in found.records]
            files_log = dict(found.log)
            files_outcome = "ok"
        except Exception as exc:
            # A broken file index must not cost the person the reply; it is named and logged.
            logger.exception("records_for_turn failed")
            files_outcome = "fehler"
            files_log = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        files_ms = int((time.perf_counter() - t2) * 1000)

        log.outcome = "angereichert" if files_outcome == "ok" else "aufzeichnungen_fehler"
        log.details = {
            "embed_ms": embed_ms,
            "memory_ms": memory_ms,
            "memories": len(state.memories),
            "files_ms": files_ms,
            "records": len(state.records),
            "files": files_log,
        }
    return state
