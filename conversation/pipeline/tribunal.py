"""Node: the tribunal checks the reply — with every registered reply check (the person's
directives, seed 000 §8.3), for citations (every file:line the reply names must have been
delivered in a records block ([AUFZEICHNUNGEN]) this turn), for provenance (a record-based
statement keeps its hedge or citation; no fact without a source in the content) and for the
deviation from the content above its threshold (``conversation.pipeline.provenance``). A finding
is logged, kept in ``Turn.checks`` and shown in the inspector.
"""

from __future__ import annotations

import logging
from typing import Any

from conversation import context
from conversation.pipeline.logging import node_log
from conversation.pipeline.provenance import (
    cited,
    deviation_check,
    provenance_check,
)
from conversation.pipeline.state import TurnState
from conversation.vocabulary import CheckOutcome, NodeOutcome

logger = logging.getLogger(__name__)


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


def _review(check: context.ReplyCheck, state: TurnState) -> dict[str, Any]:
    try:
        verdict = check.review(user=state.user, reply=state.reply)
        return {
            "outcome": str(verdict.outcome),
            "violations": list(verdict.violations),
            "details": dict(verdict.details),
        }
    except Exception as exc:
        logger.exception("reply check %s failed", check.name)
        return {
            "outcome": CheckOutcome.FAILED.value,
            "violations": [],
            "details": {"error": str(exc)},
        }


def verdict_outcome(checks: list[context.ReplyCheck], verdicts: dict[str, Any]) -> str:
    """The tribunal's outcome from the checks' verdicts: a violation before a failed check,
    and a check's own named outcome (``keine_direktiven``) where nothing was found."""
    outcomes = [(check, verdicts[check.name]["outcome"]) for check in checks]
    for check, outcome in outcomes:
        if outcome == CheckOutcome.VIOLATION:
            return check.violation_outcome
    if any(outcome == CheckOutcome.FAILED for _, outcome in outcomes):
        return "pruefung_fehler"
    named = [outcome for _, outcome in outcomes if outcome != CheckOutcome.OK]
    return str(named[0]) if named else CheckOutcome.OK.value


def run(state: TurnState) -> TurnState:
    with node_log(state, "tribunal") as log:
        if state.failed:
            log.outcome = NodeOutcome.SKIPPED_FAILED
            return state
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        checks = context.reply_checks()
        verdicts = {check.name: _review(check, state) for check in checks}
        # Only records that stood in a records block this turn count as delivered.
        delivered = context.delivered_records(state.blocks, state.found)
        citations = citation_check(state.reply, delivered)
        # seed 003 §2.3 / seed 002 §1a.4: the provenance the content carried must survive.
        origin = provenance_check(state.reply, state.composer_text, delivered)
        drift = deviation_check(state.deviation, state.extra.get("new_words") or [])
        state.checks = {**verdicts, "zitate": citations, "herkunft": origin, "abweichung": drift}
        outcome = verdict_outcome(checks, verdicts)
        if citations["ohne_beleg"]:
            log.outcome = "zitat_ohne_beleg"
            logger.warning("reply cites undelivered lines", extra={"outcome": "zitat_ohne_beleg"})
        elif any(verdicts[c.name]["outcome"] == CheckOutcome.VIOLATION for c in checks):
            log.outcome = outcome
        elif origin["outcome"] != CheckOutcome.OK.value:
            log.outcome = origin["outcome"]
            logger.warning("reply lost the provenance", extra={"outcome": log.outcome})
        else:
            # A drift above the threshold marks the turn in its checks (shown in the
            # inspector); it is no verdict of its own, so the checks' outcome stands.
            log.outcome = outcome
        if drift["ueber_schwelle"]:
            logger.info("reply drifted from the content", extra={"abweichung": drift["wert"]})
        log.details = state.checks
    return state
