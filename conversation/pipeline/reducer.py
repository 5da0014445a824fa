"""Node: deduplicate per source class, never across classes.

A file excerpt must not replace a memory and inherit its label (DESIGN.md "One turn"): memories
are deduplicated among memories (same normalised text), each composer source's items among
themselves by the source's own key (records: the same citation).
"""

from __future__ import annotations

from typing import Any

from conversation import context
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.vocabulary import NodeOutcome


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
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        state.memories, memory_dupes = _dedupe(state.memories, "text")
        details: dict[str, Any] = {"memories": len(state.memories), "memory_dupes": memory_dupes}
        dupes = memory_dupes
        for source in context.composer_sources():
            items, source_dupes = _dedupe(state.found.get(source.name, []), source.dedupe_key)
            state.found[source.name] = items
            details[source.name] = len(items)
            details[f"{source.name}_dupes"] = source_dupes
            dupes += source_dupes
        state.records = context.records_of(state.found)
        details["records"] = len(state.records)
        log.outcome = "dedupliziert" if dupes else "keine_dubletten"
        log.details = details
    return state
