"""Offline handlers of the conversation nodes (the deterministic backend, DESIGN.md)."""

from __future__ import annotations

from typing import Any

from novaberg import llm

OFFLINE_NO_CONTENT = (
    "Ich bin gerade im Offline-Modus, ohne Sprachmodell. Ich kann deine Regeln verwalten, "
    "in deinen freigegebenen Unterlagen nachsehen und dir sagen, was dort steht – frei "
    "plaudern kann ich so nicht."
)


def responder(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    """Offline voice: says the composer's content as it is; never adds a fact."""
    content = str(hints.get("content") or "").strip()
    return content or OFFLINE_NO_CONTENT


llm.register_offline("responder", responder)
