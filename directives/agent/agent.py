"""The directives agent: plugs into the turn pipeline via ``register_agent`` (apps.py)."""

from __future__ import annotations

import re
from typing import Any

from conversation import gate
from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import QuestionKind, Status
from directives import selectors, services
from directives.agent import detect as patterns
from directives.agent import offline
from directives.agent.classify import Classification, classify
from directives.agent.execute import execute as execute_pending
from directives.agent.validate import UNCHANGED, Proposal, proposal_for_row, question_for, validate
from directives.blocks import budget_note
from directives.models import DirectiveStep

DISMISSED_TEXT = "Gut, dann lasse ich es. An deinen Direktiven ist nichts geaendert."

_ORDINALS = {
    "erste": 1, "ersten": 1, "erster": 1, "eins": 1, "erstes": 1,
    "zweite": 2, "zweiten": 2, "zweiter": 2, "zwei": 2, "zweites": 2,
    "dritte": 3, "dritten": 3, "dritter": 3, "drei": 3, "drittes": 3,
    "vierte": 4, "vierten": 4, "vierter": 4, "vier": 4,
    "fünfte": 5, "fünften": 5, "fuenfte": 5, "fünf": 5,
}  # fmt: skip
_QUOTED_RE = re.compile(r"[\"'„“‚‘«»]([^\"'„“”‚‘’«»]{1,200})[\"'“”‘’«»]")
_OLD_WORDING_RE = re.compile(
    r"(?:an)?statt\s*[\"'„“‚‘«»]([^\"'„“”‚‘’«»]{1,200})[\"'“”‘’«»]", re.IGNORECASE
)
_CHOICE_FILLERS = frozenset("die der das den nummer nr bitte mit von ich meine welche".split())


def _failure_text(reason: str) -> str:
    return f"Ich konnte deinen Auftrag nicht sicher einordnen ({reason}). {UNCHANGED}"


class DirectivesAgent:
    name = "directives"
    # The understanding layer's intents this agent serves (conversation.understanding).
    intents = ("create", "read", "update", "delete", "reactivate", "undo")
    dismissed_text = DISMISSED_TEXT

    # -- router --------------------------------------------------------------------------------

    def detect(self, text: str) -> bool:
        # "Bitte förmlich", "Per du bitte": a form of address said without a verb.
        return patterns.detect(text) or (
            bool(re.search(r"[A-Za-zÄÖÜäöüß]", text)) and offline.only_address(text)
        )

    # -- handle: classify → validate → ask -----------------------------------------------------

    def handle(self, ctx: AgentContext) -> AgentResult:
        request_id = services.new_request_id()
        outcome = classify(ctx)
        services.step_record(
            user=ctx.user,
            request_id=request_id,
            step=(DirectiveStep.Step.CLASSIFIED if outcome.ok else DirectiveStep.Step.FAILED),
            action=outcome.classification.action if outcome.classification else "",
            outcome=outcome.step,
            details={**outcome.details, "reason": outcome.reason, "text": ctx.text[:300]},
        )
        if outcome.classification is None:
            return AgentResult(
                Status.FAILED,
                _failure_text(outcome.reason or outcome.step),
                step=outcome.step,
                data={"reason": outcome.reason},
            )
        result = self.propose(ctx, outcome.classification, request_id=request_id)
        # A model answer replaced by the offline classifier is named in the turn's log too.
        result.data.update(outcome.named_fallback)
        return result

    def propose(
        self, ctx: AgentContext, classification: Classification, *, request_id: str
    ) -> AgentResult:
        """Validate a classified order and ask its question (never writes). The chat's path
        after ``classify``; the rules page enters here with an order it already knows."""
        validation = validate(
            user=ctx.user,
            classification=classification,
            request_id=request_id,
            message=ctx.text,
        )
        services.step_record(
            user=ctx.user,
            request_id=request_id,
            step=(
                DirectiveStep.Step.FAILED
                if validation.result is not None and validation.result.status == Status.FAILED
                else DirectiveStep.Step.VALIDATED
            ),
            action=classification.action,
            directive_id=validation.details.get("directive_id"),
            outcome=validation.step,
            details=validation.details,
        )
        if validation.result is not None:
            return validation.result
        assert validation.proposal is not None
        return self._ask(ctx, validation.proposal)

    def _ask(
        self, ctx: AgentContext, proposal: Proposal, *, step: str | None = None
    ) -> AgentResult:
        question = proposal.question
        if proposal.kind == QuestionKind.YES_NO:
            note = budget_note(user=ctx.user)
            if note and proposal.action in ("create", "update", "reactivate"):
                # Over budget: the person is told at the next write, never silently cut.
                question = f"{note} {question}"
        result = gate.ask(
            ctx,
            agent=self.name,
            question=question,
            payload=proposal.payload,
            kind=proposal.kind,
            step=step or proposal.step,
            data={"action": proposal.action},
        )
        services.step_record(
            user=ctx.user,
            request_id=str(proposal.payload.get("request_id", "")),
            step=DirectiveStep.Step.ASKED,
            action=proposal.action,
            directive_id=proposal.payload.get("directive_id"),
            outcome=result.step,
            pending_id=result.data.get("pending_id"),
            details={"question": question, "kind": proposal.kind},
        )
        return result

    # -- the gate's callbacks ------------------------------------------------------------------

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        return execute_pending(ctx, pending)

    def answered(self, ctx: AgentContext, pending: PendingQuestion, outcome: str) -> None:
        """Audit trail of every answer that is not consent (consent is recorded by execute)."""
        payload = pending.payload or {}
        services.step_record(
            user=ctx.user,
            request_id=str(payload.get("request_id") or ""),
            step=DirectiveStep.Step.ANSWERED,
            action=str(payload.get("action", "")),
            directive_id=payload.get("directive_id"),
            outcome=outcome,
            pending_id=pending.pk,
            details={"answer": ctx.text[:200]},
        )

    def choose(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult | None:
        """A choice answer ("die zweite", "2", "'Milch'") becomes a NEW yes/no question."""
        payload = dict(pending.payload or {})
        candidates = list(payload.get("candidates") or [])
        picked = pick_candidate(ctx.text, candidates)
        if picked is None:
            return None
        action = str(payload.get("action", ""))
        active = action != "reactivate"
        row = selectors.directive_get(user=ctx.user, directive_id=int(picked["id"]), active=active)
        if row is None:
            return None
        proposal = proposal_for_row(
            action,
            row,
            request_id=str(payload.get("request_id") or services.new_request_id()),
            text=str(payload.get("text") or ""),
        )
        self.answered(ctx, pending, f"auswahl:{row.pk}")
        return self._ask(ctx, proposal, step="auswahl_getroffen")

    def correct(
        self, ctx: AgentContext, pending: PendingQuestion, correction: str
    ) -> AgentResult | None:
        """ "ja, aber sag 'Boss' statt 'Chef'" re-asks with the corrected wording (no write)."""
        payload = dict(pending.payload or {})
        action = str(payload.get("action", ""))
        if action not in ("create", "update") or pending.kind != QuestionKind.YES_NO:
            return None
        text = corrected_text(str(payload.get("text") or ""), correction, ctx.text)
        if not text.strip() or len(text) > services.MAX_TEXT_CHARS:
            return None
        payload["text"] = text
        question = question_for(
            action,
            text=text,
            old_text=str(payload.get("old_text") or ""),
            context=str(payload.get("context") or ""),
        )
        self.answered(ctx, pending, "korrektur")
        return self._ask(ctx, Proposal(action, question, payload), step="korrigiert")


def pick_candidate(answer: str, candidates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The one candidate an answer names, or None (the gate then asks again)."""
    if not candidates:
        return None
    lowered = answer.lower()
    numbers = re.findall(r"\b(\d{1,2})\b", lowered)
    words = re.findall(r"[\wäöüß]+", lowered)
    picks: set[int] = {int(n) for n in numbers}
    picks |= {_ORDINALS[w] for w in words if w in _ORDINALS}
    if "letzte" in words or "letzten" in words:
        picks.add(len(candidates))
    if len(picks) == 1:
        index = picks.pop()
        return candidates[index - 1] if 1 <= index <= len(candidates) else None
    if picks:
        return None
    quoted = _QUOTED_RE.findall(answer)
    needles = [q.strip().lower() for q in quoted] or [
        w for w in words if len(w) >= 3 and w not in _CHOICE_FILLERS
    ]
    if not needles:
        return None
    hits = [c for c in candidates if all(n in str(c.get("text", "")).lower() for n in needles)]
    return hits[0] if len(hits) == 1 else None


def corrected_text(text: str, correction: str, answer: str) -> str:
    """Replace the old wording named after "statt" with the correction, else the whole text."""
    old = _OLD_WORDING_RE.search(answer)
    if old is not None:
        needle = old.group(1).strip()
        pattern = re.compile(re.escape(needle), re.IGNORECASE)
        if needle and pattern.search(text):
            return pattern.sub(correction, text, count=1)
    return correction
