"""Node 1: an open confirmation question in this session? Then this message is its answer —
unless it is clearly something else.

A message that is a question or a new order (an agent's pattern) is not swallowed by the open
question: the pending action is never executed by it (the consent reader would not read it as
consent anyway), the question stays open, the message is routed as usual, and at the end of the
reply the open question is asked again ("Und zu vorhin: …", see ``remind``) until it is
answered, replaced or expired. A refusal that carries a new order ("Nein, nenn mich lieber
Chef") dismisses the old question and routes the order, which gets its own question.

A refusal reading is looked at once more (issue 28), since the refusal stems are searched in
every word: "Nenn mich Boss" (the stem "ne"), "Sag nie wieder Schatz", "Ändere die Regel …:
auch keine Fachbegriffe" read as refusals. Such a message is a new order unless it *starts*
with a refusal: a refusal lead ("nein", "nee", "lieber nicht" …) and/or whole clauses that
are refusal idioms ("lass das", "vergiss es", "lass mal", "doch nicht", "war nur ein Scherz",
"abbrechen", "hör auf damit" …, see ``REFUSAL_IDIOM_WORDS``). So:

- "Nein, lass das." / "Lass es." / "Vergiss es!": a refusal; the idiom is no new order.
- "Nein, nenn mich lieber Chef." / "Lass das, nenn mich Boss.": the refusal answers, the rest
  is routed as an order of its own.
- "Nenn mich Boss." / "Sag nie wieder Schatz." without a refusal lead, when ``is_order``
  sees an order: not an answer; the question stays open and is asked again after the reply.

Every branch that is not the gate's own reading keeps the pending action unexecuted: this
node only ever decides between "answer" (the gate reads it; only consent executes) and
"not an answer" (nothing executes).
"""

from __future__ import annotations

import re
from enum import StrEnum

from conversation import gate, understanding
from conversation.agents import AgentContext
from conversation.consent import Reading, read_answer
from conversation.models import PendingQuestion
from conversation.pipeline.logging import node_log
from conversation.pipeline.state import TurnState
from conversation.vocabulary import ConsentOutcome, QuestionKind, QuestionStatus

REMINDER_LEAD = "Und zu vorhin:"
_REFUSAL_LEAD_RE = re.compile(
    r"^\W*(?:nein|nee|nö|noe|ne|nope|lieber\s+nicht|doch\s+nicht|auf\s+keinen\s+fall)\b"
    r"(?:\s*,?\s*(?:danke|doch|lieber|besser|aber|sondern))*\W*",
    re.IGNORECASE,
)


def agent_context(state: TurnState) -> AgentContext:
    return AgentContext(
        user=state.user,
        character=state.character,
        session=state.session,
        text=state.text,
        turn_id=state.turn.pk,
        history=state.history,
    )


def is_order(text: str) -> bool:
    """A new order of some agent (the understanding layer, as the router reads it offline)."""
    return bool(text.strip()) and understanding.is_order(text)


def is_other_message(text: str) -> bool:
    """Clearly not an answer to the open question: a question of its own (three words or more;
    "Wie bitte?" or "Ja?" still ask the question again), or an order of some agent."""
    if "?" in text and len(re.findall(r"\w+", text)) >= 3:
        return True
    return is_order(text)


# The words a refusal idiom may consist of: a clause made only of these (and holding a refusal
# of the consent reader) says no and nothing else — "lass das", "lass es lieber sein",
# "vergiss es einfach", "lass mal gut sein", "doch nicht", "war nur ein Scherz", "abbrechen",
# "hör auf damit", "mach das bitte nicht", "ich hab's mir anders überlegt", "schon gut".
# Closed on purpose: any other word (a name, a topic, "nenn", "sag", "sprich", "Regel") makes
# the clause more than a refusal. Deliberately absent: "nie", "wieder", "mehr" ("mach das nie
# wieder" states a rule), and every verb of saying or naming.
REFUSAL_IDIOM_WORDS: frozenset[str] = frozenset(
    # no, not, none
    "nein nee neee nö noe ne nope no nah nä nix nichts nicht nich kein keine keinen auf fall "
    "bloß bloss "
    # let it be, forget it, stop
    "lass lasst lass's lassen laß lasse es das dies sein bleiben mal gut schon einfach "
    "vergiss vergesst vergessen abbrechen abbruch brich ab stopp stop halt "
    "hör hoer hört auf damit cancel "
    # doing nothing
    "mach machs mach's machen tu tus tu's tue nötig noetig notwendig brauchst braucht "
    "muss müssen will möchte möchten wollen "
    # changed one's mind, a joke
    "war nur ein scherz spaß spass witz ernst gemeint egal anders überlegt ueberlegt "
    "umentschieden geirrt vertan hab habe hab's "
    # particles, pronouns, politeness
    "doch lieber besser jetzt erstmal vorerst erst so dann also oh ach ok okay sorry "
    "bitte danke ich mich mir du dir wir uns ganz gar".split()
)
# Clauses end here ("Nein, lass das. Sprich …", "Nee – sprich …").
_CLAUSE_END_RE = re.compile(r"[,.!;:?\u2013\u2014]+|\s-\s")
_WORD_RE = re.compile(r"[\w'\u2019]+")


def _is_idiom_clause(clause: str) -> bool:
    words = [w.replace("\u2019", "'") for w in _WORD_RE.findall(clause.lower())]
    return bool(words) and REFUSAL_IDIOM_WORDS.issuperset(words)


def refusal_lead(text: str) -> int:
    """How many leading characters of ``text`` are a refusal (0: it does not start with one).

    The lead is ``_REFUSAL_LEAD_RE`` ("nein", "nee, danke", "lieber nicht" …) followed by any
    number of whole clauses that are refusal idioms, or such clauses alone; the whole lead
    must read as a refusal ("Bitte, nenn mich Boss" has none). An idiom clause followed by a
    clause with "zu" is its verb's complement, not an idiom ("Hör auf, über Fußball zu reden",
    "Vergiss nicht, mich zu erinnern"), and ends the lead before it.
    """
    match = _REFUSAL_LEAD_RE.match(text)
    end = match.end() if match is not None else 0
    while end < len(text):
        separator = _CLAUSE_END_RE.search(text, end)
        clause_end = separator.start() if separator is not None else len(text)
        after = separator.end() if separator is not None else len(text)
        if not _is_idiom_clause(text[end:clause_end]):
            break
        if separator is not None:
            following = _CLAUSE_END_RE.search(text, after)
            next_clause = text[after : following.start() if following else len(text)]
            if "zu" in _WORD_RE.findall(next_clause.lower()):
                break
        end = after
    if end == 0 or read_answer(text[:end]).outcome != ConsentOutcome.REFUSAL:
        return 0
    return end


def order_after_refusal(text: str) -> str | None:
    """ "Nein, nenn mich lieber Chef" → "Nenn mich lieber Chef"; None without a new order.

    "Nein, lass das." has none: refusal idioms after the refusal are part of it.
    """
    lead = refusal_lead(text)
    if lead == 0:
        return None
    rest = text[lead:].strip()
    if len(rest.split()) < 2 or not is_order(rest):
        return None
    return rest[:1].upper() + rest[1:]


def is_refusal_idiom(text: str) -> bool:
    """Every word of ``text`` belongs to a refusal idiom ("Hör auf damit", "war nur ein
    Scherz"): never a new order, whatever an agent's pattern sees in it."""
    return _is_idiom_clause(text)


def is_new_order_not_refusal(text: str) -> bool:
    """A message the consent reader reads as a refusal that is in truth a new order: it does
    not start with a refusal, and it is an order or a question of its own ("Nenn mich Boss",
    "Sag nie wieder Schatz", "Warum denn nicht?")."""
    return refusal_lead(text) == 0 and is_other_message(text)


class AnswerKind(StrEnum):
    """What a message means to the open question (see ``classify_answer``)."""

    ANSWER = "answer"  # the gate reads it: only consent executes
    OTHER_MESSAGE = "other_message"  # a question or order of its own; the question stays open
    REFUSAL_WITH_ORDER = "refusal_with_order"  # the refusal answers, the rest is routed


def classify_answer(text: str, reading: Reading) -> tuple[AnswerKind, str | None]:
    """The message's meaning to the open question, and the new order of a refusal with one.

    Never a reason to execute: everything but ``ANSWER`` leaves the pending action as it is,
    and an ``ANSWER`` is read by the gate's own consent reader.
    """
    if reading.outcome == ConsentOutcome.REFUSAL:
        if is_new_order_not_refusal(text):
            return AnswerKind.OTHER_MESSAGE, None  # "Nenn mich Boss" (the stem "ne")
        order = order_after_refusal(text)
        if order is not None:
            return AnswerKind.REFUSAL_WITH_ORDER, order
        return AnswerKind.ANSWER, None
    if (
        reading.outcome == ConsentOutcome.UNCLEAR
        and reading.correction is None  # "ja, aber sag 'Boss'" answers the question
        and not is_refusal_idiom(text)  # "Hör auf damit": asked again, never an order
        and is_other_message(text)
    ):
        return AnswerKind.OTHER_MESSAGE, None
    return AnswerKind.ANSWER, None


def run(state: TurnState) -> TurnState:
    with node_log(state, "pending") as log:
        ctx = agent_context(state)
        pending = gate.open_question(ctx)
        if pending is None:
            log.outcome = "keine_offene_frage"
            return state
        reading = read_answer(state.text, kind=QuestionKind(pending.kind))
        kind, order = classify_answer(state.text, reading)
        if kind == AnswerKind.REFUSAL_WITH_ORDER and order is not None:
            # The refusal answers the old question; the order is a message of its own.
            dismissed = gate.resume(ctx, pending.pk)
            state.text = order
            log.outcome = "abgelehnt_neuer_auftrag"
            log.details = {
                "pending_id": pending.pk,
                "agent": pending.agent,
                "status": dismissed.status,
                "order": order[:200],
            }
            return state
        if kind == AnswerKind.OTHER_MESSAGE:
            # Not an answer: the question stays open and is asked again after the reply.
            state.extra["reminder_pending_id"] = pending.pk
            log.outcome = "andere_nachricht"
            log.details = {
                "pending_id": pending.pk,
                "agent": pending.agent,
                "reading": str(reading.outcome),
            }
            return state
        result = gate.resume(ctx, pending.pk)
        state.route = pending.agent
        state.agent_result = result
        log.outcome = result.step or result.status
        log.details = {"pending_id": pending.pk, "agent": pending.agent, "status": result.status}
    return state


def remind(state: TurnState) -> TurnState:
    """Last node: the open question that this message did not answer is asked again."""
    pending_id = state.extra.get("reminder_pending_id")
    if not pending_id or state.failed:
        return state
    with node_log(state, "erinnerung") as log:
        pending = PendingQuestion.objects.filter(
            pk=pending_id, user=state.user, session=state.session, status=QuestionStatus.OPEN
        ).first()
        if pending is None or pending.is_expired:
            # Replaced by the new message's own question, or expired meanwhile.
            log.outcome = "keine_offene_frage"
            return state
        suffix = f"\n\n{REMINDER_LEAD} {pending.question}"
        state.reply = f"{state.reply.rstrip()}{suffix}" if state.reply.strip() else suffix.strip()
        if state.on_token is not None:
            state.on_token(suffix)
        if state.agent_result is None:
            state.question = pending.question
        log.outcome = "erinnert"
        log.details = {"pending_id": pending.pk}
    return state
