"""Node: the tribunal checks the reply — with every registered reply check (the person's
directives, seed 000 §8.3), for citations (every file:line the reply names must have been
delivered in a records block ([AUFZEICHNUNGEN]) this turn), for provenance (a record-based
statement keeps its hedge or citation; no fact without a source in the content) and for the
deviation from the content above its threshold (``conversation.pipeline.provenance``). A finding
is logged, kept in ``Turn.checks`` and shown in the inspector.

The tribunal changes what the person sees (seed 000 §8.3, "Warne!"):

- before the reply (``prepare``, called by the responder): the sentence guard goes onto the
  stream (``stream_guard``: forbidden terms and the form of address, per sentence, before it is
  sent), and the previous reply's verdict stands in the prompt as [KORREKTUR];
- after it (``run``): the guard's last sentence and its one regeneration; a violation the
  checks still find, or a citation nobody delivered, becomes a visible German note under the
  reply (``checks["hinweis"]``: the chat's ``note`` frame and the page on reload) and the next
  reply's [KORREKTUR]. The stored turn keeps both texts (``checks["waechter"]["original"]``).
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from typing import Any

from conversation import context
from conversation.models import Turn
from conversation.pipeline import claims, stream_guard
from conversation.pipeline import fallback as model_fallback
from conversation.pipeline.logging import node_log
from conversation.pipeline.provenance import (
    cited,
    deviation_check,
    provenance_check,
)
from conversation.pipeline.state import TurnState
from conversation.prompts import blocks
from conversation.vocabulary import CheckOutcome, NodeOutcome
from novaberg import llm

logger = logging.getLogger(__name__)

CORRECTION_BLOCK = "KORREKTUR"


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


def previous_note(state: TurnState) -> dict[str, Any] | None:
    """The note the tribunal put under the previous reply of this session, if any."""
    row = (
        Turn.objects.filter(
            session=state.session,
            session__user=state.user,
            role=Turn.Role.USER,
            created_at__lte=state.turn.created_at,
        )
        .exclude(pk=state.turn.pk)
        .order_by("-created_at", "-id")
        .values("id", "checks")
        .first()
    )
    note = (row["checks"] or {}).get("hinweis") if row else None
    return note if isinstance(note, dict) else None


def prepare(state: TurnState) -> None:
    """The tribunal's part before the reply is generated: the last verdict's correction into
    the responder's prompt, and the sentence guard between the stream and the person."""
    note = previous_note(state)
    if note is not None and (note.get("verstoesse") or note.get("zitate_ohne_beleg")):
        # A withheld claim was never said: there is nothing for the next reply to correct.
        state.blocks[CORRECTION_BLOCK] = blocks.correction_block(note)
    stream_guard.attach(state)


def note_for(verdicts: dict[str, Any], citations: dict[str, Any]) -> dict[str, Any] | None:
    """The German note under the reply: each rule a check found broken (seed 000 §8.3: "Das
    verstößt gegen die Direktive: [Regel].") and each citation nobody delivered."""
    violations = [
        str(v)
        for verdict in verdicts.values()
        if verdict["outcome"] == CheckOutcome.VIOLATION
        for v in verdict["violations"]
    ]
    invented = [str(c) for c in citations.get("ohne_beleg") or []]
    if not violations and not invented:
        return None
    sentences = [f"Das verstößt gegen die Direktive: {v}." for v in violations]
    sentences += [
        f"Die Quelle {c} wurde mir nicht vorgelegt – diese Angabe ist nicht belegt."
        for c in invented
    ]
    return {
        "text": "Hinweis: " + " ".join(sentences),
        "verstoesse": violations,
        "zitate_ohne_beleg": invented,
    }


def with_claims(note: dict[str, Any] | None, found: dict[str, Any]) -> dict[str, Any] | None:
    """The note with the withheld claims added (issue 27: noted, said to the person)."""
    claim_note = claims.note(list(found.get("zurueckgehalten") or []))
    if claim_note is None:
        return note
    if note is None:
        return claim_note
    return {
        **note,
        "text": f"{note['text']} {claim_note['text'].removeprefix('Hinweis: ')}",
        "behauptungen_ohne_ausfuehrung": claim_note["behauptungen_ohne_ausfuehrung"],
    }


def run(state: TurnState) -> TurnState:
    # The guard's last sentence (and its one regeneration) goes out before anything is judged:
    # the verdict is about what the person saw.
    stream_guard.finish(state)
    guarded = state.extra.pop("waechter_befund", None)
    if guarded is not None:
        state.checks["waechter"] = guarded
    # issue 27: a claimed write is checked against what this turn executed (the guard withheld
    # the uncovered sentences; here they are named and noted), whatever the turn's outcome.
    found = claims.run(state, guarded)
    claim_note = with_claims(None, found)
    if claim_note is not None:
        state.checks["hinweis"] = claim_note
    with node_log(state, "tribunal") as log:
        if state.failed:
            log.outcome = NodeOutcome.SKIPPED_FAILED
            return state
        if state.asks:
            log.outcome = NodeOutcome.SKIPPED_QUESTION
            return state
        checks = context.reply_checks()
        # The model was unreachable or too slow earlier in this turn: its verdict is not waited
        # for again (the same rule as vector, composer and responder). Inside a fired cancel
        # scope the gateway answers at once and each check's offline implementation decides.
        down = model_fallback.down_this_turn(state.extra)
        with llm.cancel_scope(lambda: True) if down else nullcontext():
            verdicts = {check.name: _review(check, state) for check in checks}
        # Only records that stood in a records block this turn count as delivered.
        delivered = context.delivered_records(state.blocks, state.found)
        citations = citation_check(state.reply, delivered)
        # seed 003 §2.3 / seed 002 §1a.4: the provenance the content carried must survive.
        origin = provenance_check(state.reply, state.composer_text, delivered)
        drift = deviation_check(state.deviation, state.extra.get("new_words") or [])
        state.checks = {
            **state.checks,
            **verdicts,
            "zitate": citations,
            "herkunft": origin,
            "abweichung": drift,
        }
        note = with_claims(note_for(verdicts, citations), found)
        if note is not None:
            state.checks["hinweis"] = note
        outcome = verdict_outcome(checks, verdicts)
        fallback = any(
            verdicts[c.name]["details"].get("ersatz") == NodeOutcome.OFFLINE_FALLBACK
            for c in checks
        )
        if fallback and outcome in {CheckOutcome.OK, CheckOutcome.OK.value}:
            # The model's verdict was unusable; the deterministic checks found nothing.
            outcome = NodeOutcome.OFFLINE_FALLBACK.value
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
