"""Per-turn retrieval over the pair's released files (seed 002 §2/§3.0).
Placeholder until the Files II issue fills it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RetrievalResult:
    # Each record: path, lines ("a-b"), citation ("path:a-b"), channel ("dicht"/"lexikalisch"/
    # "beide"), strength ("stark"/"mittel"/"schwach"), size, eigentum, archived, summary, excerpt,
    # root_id, cosine (float | None).
    records: list[dict[str, Any]] = field(default_factory=list)
    # For PipelineLog: hits, channels, worst_cosine, ms, ...
    log: dict[str, Any] = field(default_factory=dict)


def records_for_turn(
    *, user: Any, character: Any, query_vector: list[float] | None, text: str
) -> RetrievalResult:
    return RetrievalResult(log={"hits": 0})
