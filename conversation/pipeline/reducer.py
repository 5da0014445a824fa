"""Node: deduplicate per source class, never across classes.

A file excerpt must not replace a memory and inherit its label (DESIGN.md "One turn"): memories
are deduplicated among memories (same normalised text), records among records (same citation).
"""

from __future__ import annotations

from typing import Any

from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState


def _dedupe(items: list[dict[str, Any]], key: str) -> tuple[list[dict[str, Any]], int]:
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    for item in items:
        value = " ".join(str(item.get(key) or "").lower().split())
        if value and value in seen:
            continue
        seen.add(value)
        kept.append(item)
    return kept, len(items) - len(kept)


def run(state: TurnState) -> TurnState:
    with node_log(state, "reducer") as log:
        if state.asks:
            log.outcome = "uebersprungen_rueckfrage"
            return state
        state.memories, memory_dupes = _dedupe(state.memories, "text")
        state.records, record_dupes = _dedupe(state.records, "citation")
        log.outcome = "dedupliziert" if memory_dupes or record_dupes else "keine_dubletten"
        log.details = {
            "memories": len(state.memories),
            "memory_dupes": memory_dupes,
            "records": len(state.records),
            "record_dupes": record_dupes,
        }
    return state
