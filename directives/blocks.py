"""[DIREKTIVEN] block (seed 000 §8.1). Placeholder until the directives issue fills it."""

from __future__ import annotations

from typing import Any


def directives_block(*, user: Any) -> str:
    """The [DIREKTIVEN] block of all active directives of ``user``; "" when there are none."""
    return ""
