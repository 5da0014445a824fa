"""[AUFZEICHNUNGEN] block for the composer. Placeholder until the Files II issue fills it."""

from __future__ import annotations

from typing import Any


def records_block(records: list[dict[str, Any]]) -> str:
    return ""
