"""Node: the tribunal checks the reply — against the person's directives (seed 000 §8.3,
``directives.tribunal.review``) and for citations: every file:line the reply names must have
been delivered in [AUFZEICHNUNGEN] this turn. A mismatch is logged and shown in the inspector.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from directives import tribunal as directives_tribunal

logger = logging.getLogger(__name__)

# "notes/plan.md:3-7", "plan.md:12", "Zeile" forms are not citations. A path needs an extension.
CITATION_RE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}):(\d+)(?:[-–](\d+))?"
)


def cited(reply: str) -> list[tuple[str, int, int]]:
    out = []
    for m in CITATION_RE.finditer(reply):
        start = int(m.group(2))
        end = int(m.group(3)) if m.group(3) else start
        out.append((m.group(1), start, end))
    return out


def _delivered(records: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    spans = []
    for r in records:
        path, lines = str(r.get("path") or ""), str(r.get("lines") or "")
        parts = lines.replace("–", "-").split("-")
        try:
            start = int(parts[0])
            end = int(parts[-1])
        except ValueError:
            continue
        spans.append((path, start, end))
    return spans


def citation_check(reply: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Citations in ``reply`` that no delivered record covers (same path, lines inside)."""
    delivered = _delivered(records)
    named = cited(reply)
    undelivered = [
        f"{path}:{start}-{end}" if end != start else f"{path}:{start}"
        for path, start, end in named
        if not any(
            (p == path or p.endswith("/" + path)) and s <= start and end <= e
            for p, s, e in delivered
        )
    ]
    return {"genannt": len(named), "ohne_beleg": undelivered}


def run(state: TurnState) -> TurnState:
    with node_log(state, "tribunal") as log:
        if state.failed:
            log.outcome = "uebersprungen_fehler"
            return state
        if state.asks:
            log.outcome = "uebersprungen_rueckfrage"
            return state
        try:
            verdict = directives_tribunal.review(user=state.user, reply=state.reply)
            directives = {
                "outcome": verdict.outcome,
                "violations": list(verdict.violations),
                "details": dict(verdict.details),
            }
        except Exception as exc:
            logger.exception("tribunal review failed")
            directives = {"outcome": "fehler", "violations": [], "details": {"error": str(exc)}}
        # Only records that stood in [AUFZEICHNUNGEN] this turn count as delivered.
        delivered = state.records if state.blocks.get("AUFZEICHNUNGEN") else []
        citations = citation_check(state.reply, delivered)
        state.checks = {"direktiven": directives, "zitate": citations}
        if citations["ohne_beleg"]:
            log.outcome = "zitat_ohne_beleg"
            logger.warning("reply cites undelivered lines", extra={"outcome": "zitat_ohne_beleg"})
        elif directives["outcome"] == "verstoss":
            log.outcome = "direktive_verletzt"
        elif directives["outcome"] == "fehler":
            log.outcome = "pruefung_fehler"
        else:
            log.outcome = "ok" if directives["outcome"] == "ok" else directives["outcome"]
        log.details = state.checks
    return state
