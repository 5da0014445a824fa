"""Tribunal: checks Nova's reply against the person's directives (seed 000 §8.3).
Placeholder until the directives issue fills it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class TribunalResult:
    outcome: str  # "keine_direktiven" | "ok" | "verstoss" | "fehler"
    violations: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


def review(*, user: Any, reply: str) -> TribunalResult:
    return TribunalResult("keine_direktiven")
