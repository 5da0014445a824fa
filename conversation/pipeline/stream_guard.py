"""The sentence guard: the deterministic half of the tribunal, run on the stream (seed 000 §8.3,
"Warne!"). The model's verdict comes after the reply; a forbidden word or the wrong form of
address must never reach the person at all, so these checks run on every sentence **before**
it is sent:

- the reply's tokens are buffered up to a sentence end;
- a sentence in the wrong form of address ("Sieze mich" active, the model says "du") is
  rewritten (``conversation.address.to_sie`` / ``to_du``) and sent; one the rewrite cannot
  clear is withheld;
- a sentence with a term a rule forbids ("Sprich nie von Milch") is withheld, and so is the rest
  of the original reply (it may refer to the withheld sentence);
- a sentence that claims a write this turn did not execute ("Ich habe alle Ihre Regeln
  gelöscht", ``conversation.pipeline.claims``) is withheld; the rest of the reply goes on;
- after the stream, when something was withheld, the rest is regenerated **once**: one more
  responder call that sees what was already said and a correction, itself guarded; a sentence
  that was already sent is not sent twice. When that call fails, the original's remaining clean
  sentences are sent; a violating sentence is left out in every case.

The person's forbidden terms come from apps that know the rules (``register_forbidden_terms``;
directives registers its "Sprich nie von …" reader), the form of address from
``conversation.address``; conversation imports no such app. What the person saw becomes the
turn's reply; the model's original text and every change stand in ``Turn.checks["waechter"]``.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conversation import address, context
from conversation.address import AddressForm
from conversation.pipeline import claims as claim_check
from novaberg import llm

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from conversation.pipeline.state import TurnState

logger = logging.getLogger(__name__)

# A source of the person's forbidden terms: (the rule's wording, the term).
ForbiddenTerms = Callable[["User"], list[tuple[str, str]]]
_TERM_SOURCES: dict[str, ForbiddenTerms] = {}

# A sentence ends at . ! ? … (with closing quotes/brackets) followed by whitespace, or at a
# line break (Markdown list items and paragraphs).
_SENTENCE_END = re.compile(r"[.!?…]+[\"“”»)\]]*\s+|\n+")
# A stream that never ends a sentence is still checked and sent in bounded pieces.
MAX_BUFFER_CHARS = 240

REGENERATE_INSTRUCTION = (
    "Deine Antwort wurde nach dem oben Gesagten angehalten: Ein Satz verstieß gegen diese "
    "Regel des Nutzers: {rules}. Setze die Antwort fort, ohne diesen Inhalt und ohne die Regel "
    "zu verletzen. Wiederhole nichts, was du schon gesagt hast, und erwähne die Unterbrechung "
    "nicht."
)
REGENERATE_INSTRUCTION_EMPTY = (
    "Deine Antwort verstieß gegen diese Regel des Nutzers: {rules}. Antworte noch einmal, "
    "ohne diesen Inhalt und ohne die Regel zu verletzen."
)
# Everything was withheld and nothing could replace it: the person still gets a sentence.
ALL_WITHHELD_DU = (
    "Dazu sage ich lieber nichts – meine Antwort hätte gegen eine deiner Regeln verstoßen."
)
ALL_WITHHELD_SIE = (
    "Dazu sage ich lieber nichts – meine Antwort hätte gegen eine Ihrer Regeln verstoßen."
)


def register_forbidden_terms(name: str, source: ForbiddenTerms) -> None:
    """Add (or, under the same name, replace) a source of terms the person forbade."""
    _TERM_SOURCES[name] = source


def unregister_forbidden_terms(name: str) -> None:
    _TERM_SOURCES.pop(name, None)


def forbidden_terms(user: User) -> list[tuple[str, str]]:
    terms: list[tuple[str, str]] = []
    for name, source in _TERM_SOURCES.items():
        try:
            terms.extend(source(user))
        except Exception:
            # A broken source is named in the log; the other checks still run.
            logger.exception("forbidden terms source failed", extra={"source": name})
    return terms


@dataclass
class SentenceGuard:
    """Checks sentences of one stream and passes the clean ones to ``emit``."""

    form: AddressForm | None
    terms: list[tuple[str, str]]
    emit: Callable[[str], None] | None
    # Sentences already sent (normalised): a regeneration (``dedupe``) must not send them twice.
    already_sent: set[str] = field(default_factory=set)
    dedupe: bool = False
    buffer: str = ""
    sent: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # clean sentences after a withheld one
    rewritten: list[dict[str, str]] = field(default_factory=list)
    withheld: list[dict[str, str]] = field(default_factory=list)
    first_sent_at: float | None = None
    # Claims of a write this turn did not execute: checked before anything else, withheld
    # without stopping the stream (the rest of the reply may be true).
    claims: claim_check.ClaimCheck | None = None
    unbelegt: list[dict[str, Any]] = field(default_factory=list)

    def feed(self, token: str) -> None:
        self.buffer += token
        while True:
            match = _SENTENCE_END.search(self.buffer)
            if match is None:
                break
            sentence, self.buffer = self.buffer[: match.end()], self.buffer[match.end() :]
            self._take(sentence)
        if len(self.buffer) > MAX_BUFFER_CHARS:
            cut = self.buffer.rfind(" ", 0, MAX_BUFFER_CHARS) + 1 or MAX_BUFFER_CHARS
            piece, self.buffer = self.buffer[:cut], self.buffer[cut:]
            self._take(piece)

    def close(self) -> None:
        """The stream ended: the last sentence (without its end mark) is checked too."""
        if self.buffer:
            piece, self.buffer = self.buffer, ""
            self._take(piece)

    @property
    def stopped(self) -> bool:
        """A sentence was withheld: the rest of this stream is held back."""
        return bool(self.withheld)

    def send(self, text: str) -> None:
        if not text:
            return
        if self.first_sent_at is None:
            self.first_sent_at = time.perf_counter()
        self.sent.append(text)
        self.already_sent.add(_norm(text))
        if self.emit is not None:
            self.emit(text)

    def _take(self, sentence: str) -> None:
        if not sentence.strip():
            # Whitespace between sentences goes with the stream as it is.
            if self.stopped:
                self.held.append(sentence)
            else:
                self.send(sentence)
            return
        if self.claims is not None and (claim := self.claims(sentence)) is not None:
            self.unbelegt.append(claim)
            return
        checked, violation = self.check(sentence)
        if violation is not None:
            self.withheld.append({"satz": sentence.strip(), **violation})
            return
        if self.dedupe and _norm(checked) in self.already_sent:
            return  # a regeneration repeating what the person already read
        if self.stopped:
            self.held.append(checked)
        else:
            self.send(checked)

    def check(self, sentence: str) -> tuple[str, dict[str, str] | None]:
        """The sentence as it may be sent, or the violation that withholds it."""
        # Naming the rule itself ("1. Sprich nie von Milch", "Die Direktive 'Sprich nie von
        # Milch' ist angelegt") is not talking about Milch: the rule's wording is left out.
        spoken = sentence
        for rule in {rule for rule, _term in self.terms}:
            spoken = re.sub(re.escape(rule.strip().rstrip(".!")), " ", spoken, flags=re.IGNORECASE)
        for rule, term in self.terms:
            if re.search(rf"\b{re.escape(term)}", spoken, re.IGNORECASE):
                return sentence, {"direktive": rule, "grund": f"„{term}“ kommt vor"}
        if self.form is AddressForm.SIE:
            # Always rewritten: an imperative ("Versuch es …") is du-form without a "du".
            fixed = address.to_sie(sentence)
            if address.has_du(fixed):
                return sentence, {"direktive": "Sie-Anrede", "grund": "Anrede mit „du“"}
        elif self.form is AddressForm.DU:
            fixed = address.to_du(sentence) if address.has_formal_sie(sentence) else sentence
            if address.has_formal_sie(fixed):
                return sentence, {"direktive": "Du-Anrede", "grund": "Anrede mit „Sie“"}
        else:
            fixed = sentence
        if fixed != sentence:
            self.rewritten.append({"vorher": sentence.strip(), "nachher": fixed.strip()})
        return fixed, None


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def attach(state: TurnState) -> SentenceGuard:
    """Put the guard between the responder's stream and the person: ``state.on_token`` then
    receives tokens, the person checked sentences. ``finish`` sends what is left."""
    guard = SentenceGuard(
        form=address.demanded_form(state.user),
        terms=forbidden_terms(state.user),
        emit=state.on_token,
        claims=claim_check.check_for(state),
    )
    state.extra["waechter"] = guard
    state.extra["waechter_emit"] = state.on_token
    state.on_token = guard.feed
    return guard


def _rules(withheld: list[dict[str, str]]) -> str:
    return "; ".join(dict.fromkeys(f"„{w['direktive']}“" for w in withheld))


def _regenerate(state: TurnState, guard: SentenceGuard) -> dict[str, Any]:
    """One more responder call for the rest, itself guarded (seed 000 §8.3)."""
    said = "".join(guard.sent).strip()
    messages = list(state.prompts.get("responder") or [])
    if not messages:
        return {"outcome": "kein_prompt"}
    instruction = (REGENERATE_INSTRUCTION if said else REGENERATE_INSTRUCTION_EMPTY).format(
        rules=_rules(guard.withheld)
    )
    if said:
        messages.append({"role": "assistant", "content": said})
    messages.append({"role": "user", "content": instruction})
    state.prompts["responder_korrektur"] = messages
    second = SentenceGuard(
        form=guard.form,
        terms=guard.terms,
        emit=guard.emit,
        already_sent=guard.already_sent,
        dedupe=True,
        first_sent_at=guard.first_sent_at,
        claims=guard.claims,
    )
    hints = {
        "content": state.composer_text,
        "text": state.text,
        "directives": "\n\n".join(
            state.blocks[c.block] for c in context.contract_blocks() if state.blocks.get(c.block)
        ),
    }
    failure: llm.LLMFailure | None = None
    tokens: list[str] = []
    try:
        for event in llm.get_gateway().stream(messages, purpose="responder", hints=hints):
            if event.kind == "token":
                tokens.append(event.text)
                second.feed(event.text)
            elif event.kind == "error":
                failure = event.failure
                break
    except Exception as exc:
        # The correction is a second chance, not a second way to crash the turn.
        logger.exception("stream guard regeneration crashed")
        failure = llm.LLMFailure("absturz", str(exc)[:300])
    second.close()
    guard.unbelegt.extend(second.unbelegt)
    guard.sent.extend(second.sent)
    guard.rewritten.extend(second.rewritten)
    if guard.first_sent_at is None:
        guard.first_sent_at = second.first_sent_at
    result: dict[str, Any] = {"text": "".join(tokens), "gesendet": len(second.sent)}
    if failure is not None and not second.sent:
        result.update(outcome="fehler", step=failure.step)
    elif second.withheld:
        result.update(outcome="wieder_verstoss", zurueckgehalten=second.withheld)
    elif not second.sent:
        result.update(outcome="leer")
    else:
        result.update(outcome="ok")
    return result


def finish(state: TurnState) -> None:
    """After the responder: send the last sentence, regenerate the rest once when a sentence
    was withheld, and make what the person saw the turn's reply."""
    guard = state.extra.pop("waechter", None)
    if not isinstance(guard, SentenceGuard):
        return
    state.on_token = state.extra.pop("waechter_emit", None)
    guard.close()
    original = state.reply
    regenerated: dict[str, Any] = {"outcome": "nicht_noetig"}
    if guard.withheld:
        if state.failed:
            regenerated = {"outcome": "uebersprungen_fehler"}
        else:
            regenerated = _regenerate(state, guard)
        if not regenerated.get("gesendet"):
            # No usable continuation: the original's clean rest, the violation left out.
            for sentence in guard.held:
                guard.send(sentence)
        guard.held = []
    seen = "".join(guard.sent)
    if not seen.strip() and guard.withheld:
        guard.send(address.say(ALL_WITHHELD_DU, ALL_WITHHELD_SIE, user=state.user))
        seen = "".join(guard.sent)
    if not seen.strip() and guard.unbelegt:
        # The whole reply was a false claim: the person hears that nothing was changed.
        guard.send(claim_check.NOTHING_CHANGED_TEXT)
        seen = "".join(guard.sent)
    if guard.withheld or guard.rewritten or guard.unbelegt:
        state.reply = seen.strip()
    elapsed = state.extra.get("elapsed_ms")
    record: dict[str, Any] = {
        "anrede": guard.form.value if guard.form else None,
        "verbotene_woerter": [term for _rule, term in guard.terms],
        "umgeschrieben": guard.rewritten,
        "zurueckgehalten": guard.withheld,
        "neu_erzeugt": regenerated,
        "behauptungen_ohne_ausfuehrung": guard.unbelegt,
        "behauptungen_belegt": guard.claims.covered if guard.claims is not None else [],
        "behauptungen_fehler": guard.claims.failures if guard.claims is not None else [],
    }
    if original != state.reply:
        record["original"] = original
    if guard.first_sent_at is not None and callable(elapsed):
        # What the person waited for: the first checked sentence, not the first model token.
        waited = int((time.perf_counter() - guard.first_sent_at) * 1000)
        record["erster_satz_ms"] = elapsed() - waited
    state.extra["waechter_befund"] = record
    if guard.withheld or guard.rewritten or guard.unbelegt:
        logger.info(
            "stream guard changed the reply",
            extra={
                "outcome": "zurueckgehalten" if guard.withheld else "umgeschrieben",
                "umgeschrieben": len(guard.rewritten),
                "zurueckgehalten": len(guard.withheld),
                "behauptungen_ohne_ausfuehrung": len(guard.unbelegt),
            },
        )


def abandon(state: TurnState) -> None:
    """The turn was stopped (Stop, disconnect, deadline) before the tribunal ran: what the
    guard still buffered or held back was never sent, so it is not the reply either."""
    guard = state.extra.pop("waechter", None)
    if not isinstance(guard, SentenceGuard):
        return
    state.on_token = state.extra.pop("waechter_emit", None)
    original = state.reply
    state.reply = "".join(guard.sent).strip()
    state.checks["waechter"] = {
        "anrede": guard.form.value if guard.form else None,
        "umgeschrieben": guard.rewritten,
        "zurueckgehalten": guard.withheld,
        "behauptungen_ohne_ausfuehrung": guard.unbelegt,
        "nicht_gesendet": guard.buffer + "".join(guard.held),
        "neu_erzeugt": {"outcome": "abgebrochen"},
        **({"original": original} if original != state.reply else {}),
    }
