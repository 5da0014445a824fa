"""Node: ONE query vector per turn (such_vektor), reused by every source.

Memory ([GEDAECHTNIS]) and every registered composer source (``conversation.context``: the
file index's [AUFZEICHNUNGEN], …) are searched with the same vector; the memory write later
stores the person's words with it too. Embedding the same text twice would cost time and lose
the shared "gravity" of one vector (seed 002 §3.0).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from conversation import context, memory
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.vocabulary import NodeOutcome
from novaberg import embeddings

logger = logging.getLogger(__name__)


def run(state: TurnState) -> TurnState:
    with node_log(state, "enricher") as log:
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        if state.agent_result is not None:
            # On the task path the content is the agent's result; no memory or records.
            log.outcome = "uebersprungen_aufgabe"
            return state
        t0 = time.perf_counter()
        try:
            vector = state.query_vector = embeddings.embed_one(state.text)
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
            vector=vector,
            exclude_turn_ids=state.extra.get("history_turn_ids", []),
        )
        memory_ms = int((time.perf_counter() - t1) * 1000)

        details: dict[str, Any] = {
            "embed_ms": embed_ms,
            "memory_ms": memory_ms,
            "memories": len(state.memories),
        }
        query = context.SourceQuery(
            user=state.user, character=state.character, text=state.text, query_vector=vector
        )
        failed: list[context.ComposerSource] = []
        for source in context.composer_sources():
            t2 = time.perf_counter()
            try:
                found = source.search(query)
                state.found[source.name] = [dict(item) for item in found.items]
                details[source.name] = dict(found.log)
            except Exception as exc:
                # A broken source must not cost the person the reply; it is named and logged.
                logger.exception("context source %s failed", source.name)
                failed.append(source)
                state.found[source.name] = []
                details[source.name] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
            details[f"{source.name}_ms"] = int((time.perf_counter() - t2) * 1000)
        state.records = context.records_of(state.found)
        details["records"] = len(state.records)

        log.outcome = (
            f"{failed[0].block.lower().replace(' ', '_')}_fehler" if failed else "angereichert"
        )
        log.details = details
    return state
