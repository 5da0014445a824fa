"""Validate against the database (seed 000 §6): resolve the target, check its owner and state,
search by description (ILIKE) when no number was given, check duplicates, and turn the order
into the exact confirmation question. Never writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User

from conversation.agents import AgentResult
from conversation.vocabulary import QuestionKind, Status
from directives import selectors, services
from directives.agent.classify import Classification
from directives.models import Directive, DirectiveStep
from directives.services import MAX_TEXT_CHARS

UNCHANGED = "An deinen Direktiven ist nichts geändert."
VERB_INFINITIVE = {"update": "ersetzen", "delete": "entfernen", "reactivate": "wiederherstellen"}
MAX_CHOICES = 5


@dataclass
class Proposal:
    action: str
    question: str
    payload: dict[str, Any]
    kind: QuestionKind = QuestionKind.YES_NO
    step: str = "rueckfrage"


@dataclass
class Validation:
    result: AgentResult | None = None
    proposal: Proposal | None = None
    step: str = "validiert"
    details: dict[str, Any] = field(default_factory=dict)


def not_found_text(action: str) -> str:
    # seed 000 §4.4: a foreign and a missing row carry the same answer.
    verb = VERB_INFINITIVE.get(action, "ändern")
    return f"Ich finde keine passende Direktive, die ich {verb} könnte. {UNCHANGED}"


def _q(text: str) -> str:
    return f"'{text}'"


def question_for(action: str, *, text: str, old_text: str = "", context: str = "") -> str:
    """The exact wording of the mandatory question (seed 000 §6.1); never "(ID None)"."""
    shown = _q(text) + (f" (Kontext: {context})" if context else "")
    if action == "create":
        return f"Ich soll die Direktive {shown} anlegen. Soll ich das so machen?"
    if action == "update":
        return (
            f"Ich soll die Direktive {_q(old_text)} durch {_q(text)} ersetzen. "
            "Soll ich das so machen?"
        )
    if action == "delete":
        return f"Ich soll die Direktive {_q(text)} entfernen. Soll ich das so machen?"
    if action == "reactivate":
        return f"Ich soll die Direktive {_q(text)} wiederherstellen. Soll ich das so machen?"
    raise ValueError(f"no question for action {action!r}")


def _listed(texts: list[str]) -> str:
    quoted = [_q(t) for t in texts]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} und {quoted[-1]}"


def delete_many_question(texts: list[str]) -> str:
    """One question for several rules ("Lösch alle meine Regeln"): every one is named."""
    listed = _listed(texts)
    return f"Ich soll diese {len(texts)} Direktiven entfernen: {listed}. Soll ich das so machen?"


def duplicate_question(*, old_text: str, text: str) -> str:
    # seed 000 §6.2: "Existiert bereits. Aktualisieren?"
    return (
        f"Die Direktive {_q(old_text)} existiert bereits. Soll ich sie durch {_q(text)} ersetzen?"
    )


def similar_question(*, old_text: str, text: str) -> str:
    # seed 000 §6.2: a similar rule may coexist — "… Trotzdem anlegen?"; "nein" creates nothing.
    return f"Es gibt schon die ähnliche Direktive {_q(old_text)}. Trotzdem {_q(text)} anlegen?"


def choice_question(action: str, candidates: list[dict[str, Any]]) -> str:
    listed = ", ".join(f"[{n}] {_q(c['text'])}" for n, c in enumerate(candidates, start=1))
    return (
        f"Dazu passen mehrere Direktiven: {listed}. "
        f"Welche soll ich {VERB_INFINITIVE.get(action, 'ändern')}?"
    )


# Words that frame a rule without saying what it is about: how to speak of a thing ("Sprich
# nie von …", "Erwähne nie …") is the same rule; what it is about (Milch, Keramik) is not.
# The search's stop words (negations, pronouns, articles, ...) plus the verbs of speaking and
# using that rules are phrased with.
_FRAME_WORDS = frozenset(
    "erwähn erwähne erwähnen erwaehne erwaehnen red rede reden redest sprichst sprecht "
    "erzähl erzähle erzählen erzaehle benutz benutze benutzen verwend verwende verwenden "
    "nutz nutze nutzen gebrauche gebrauchen thema themen jemals überhaupt ueberhaupt "
    "künftig kuenftig zukünftig fortan mehr gar bitte bitt".split()
)
_FRAME_STEMS = frozenset(term for word in _FRAME_WORDS for term in selectors.search_terms(word))
SIMILAR_AT = 0.5


def words_of(text: str) -> list[str]:
    return services.words_of(text)


def is_same(a: str, b: str) -> bool:
    """The same wording (case and punctuation aside): the key under which a rule exists once."""
    return services.normalised_text(a) == services.normalised_text(b)


def content_words(text: str) -> set[str]:
    """What a rule is about: its stemmed words without the frame words."""
    return set(selectors.search_terms(text)) - _FRAME_STEMS


def _compared_words(a: str, b: str) -> tuple[set[str], set[str]] | None:
    ca, cb = content_words(a), content_words(b)
    if not ca or not cb:
        if ca or cb:
            return None
        ca, cb = set(words_of(a)), set(words_of(b))
        if not ca or not cb:
            return None
    return ca, cb


def is_same_rule(a: str, b: str) -> bool:
    """The same rule in other words: exactly the same content words ("Erwähne nie Milch" is
    "Sprich nie von Milch"); seed 000 §6.2 "Existiert bereits. Aktualisieren?"."""
    words = _compared_words(a, b)
    return words is not None and words[0] == words[1]


def is_similar(a: str, b: str) -> bool:
    """The same rule in other words: their content words overlap (Jaccard ≥ SIMILAR_AT).

    Frame words do not count, so "Sprich nie von Keramik" is not "Sprich nie von Milch", while
    "Erwähne nie Milch" and "Sprich nie wieder von Milch" are. Rules with no content word at
    all (only frame words) are compared on all their words."""
    words = _compared_words(a, b)
    if words is None:
        return False
    ca, cb = words
    return len(ca & cb) / len(ca | cb) >= SIMILAR_AT


def _proposal(
    action: str, row: Directive | None, *, request_id: str, text: str = "", context: str = ""
) -> Proposal:
    payload: dict[str, Any] = {"action": action, "request_id": request_id}
    if action == "create":
        payload.update(text=text, context=context)
        return Proposal(action, question_for(action, text=text, context=context), payload)
    assert row is not None
    payload["directive_id"] = row.pk
    if action == "update":
        payload.update(text=text, old_text=row.text)
        return Proposal(action, question_for(action, text=text, old_text=row.text), payload)
    payload["text"] = row.text
    return Proposal(action, question_for(action, text=row.text), payload)


def proposal_for_row(action: str, row: Directive, *, request_id: str, text: str = "") -> Proposal:
    return _proposal(action, row, request_id=request_id, text=text)


def _delete_many(rows: list[Directive], *, request_id: str) -> Proposal:
    """Delete several rules on one consent: ``directive_ids`` instead of ``directive_id``."""
    texts = [row.text for row in rows]
    payload = {
        "action": "delete",
        "request_id": request_id,
        "directive_ids": [row.pk for row in rows],
        "texts": texts,
    }
    return Proposal("delete", delete_many_question(texts), payload)


def _choice(action: str, rows: list[Directive], *, request_id: str, text: str = "") -> Proposal:
    candidates = [{"id": r.pk, "text": r.text} for r in rows[:MAX_CHOICES]]
    payload = {
        "action": action,
        "request_id": request_id,
        "candidates": candidates,
        "text": text,
    }
    return Proposal(
        action,
        choice_question(action, candidates),
        payload,
        kind=QuestionKind.CHOICE,
        step="auswahl",
    )


def _failure(step: str, text: str, **details: Any) -> Validation:
    return Validation(
        result=AgentResult(Status.FAILED, text, step=step), step=step, details=details
    )


def _not_found(action: str, **details: Any) -> Validation:
    return Validation(
        result=AgentResult(Status.FAILED, not_found_text(action), step="nicht_gefunden"),
        step="nicht_gefunden",
        details=details,
    )


def _read(user: User) -> Validation:
    rows = list(selectors.directive_list(user=user, active=True))
    if not rows:
        text = "Du hast mir bisher keine Direktiven gegeben."
    else:
        lines = [f"{n}. {row.text}" for n, row in enumerate(rows, start=1)]
        text = "Das sind deine Direktiven, an die ich mich halte:\n" + "\n".join(lines)
    return Validation(
        result=AgentResult(Status.DONE, text, step="gelesen", data={"count": len(rows)}),
        step="gelesen",
        details={"count": len(rows)},
    )


def _resolve(
    user: User, c: Classification, *, active: bool, description: str
) -> tuple[list[Directive], str]:
    """Target rows of the order and how they were found."""
    if c.target_unknown:
        return [], "nummer_unbekannt"
    if c.target_id is not None:
        row = selectors.directive_get(user=user, directive_id=c.target_id, active=active)
        return ([row] if row else []), "nummer"
    rows = selectors.directive_search(user=user, description=description, active=active)
    if not rows and not active and not selectors.search_terms(description):
        # "Stelle sie wieder her": no description, so the most recently deleted one.
        rows = selectors.inactive_restorable(user=user, limit=1)
    return rows, "suche"


def _check_text(text: str) -> Validation | None:
    if not text.strip():
        return _failure(
            "anweisung_leer",
            f"Ich habe aus deiner Nachricht keine Regel lesen können. {UNCHANGED}",
        )
    if len(text) > MAX_TEXT_CHARS:
        return _failure(
            "anweisung_zu_lang",
            f"Diese Regel ist mit {len(text)} Zeichen zu lang; höchstens {MAX_TEXT_CHARS} "
            f"Zeichen gehen. {UNCHANGED}",
        )
    return None


def _validate_create(user: User, c: Classification, request_id: str) -> Validation:
    text = " ".join(c.anweisung.split())
    failed = _check_text(text)
    if failed is not None:
        return failed
    active = list(selectors.directive_list(user=user, active=True))
    for row in active:
        if is_same(row.text, text):
            return Validation(
                result=AgentResult(
                    Status.DONE,
                    f"Die Direktive {_q(row.text)} gilt bereits. {UNCHANGED}",
                    step="schon_vorhanden",
                ),
                step="schon_vorhanden",
                details={"directive_id": row.pk},
            )
    same_rule = [row for row in active if is_same_rule(row.text, text)]
    if same_rule:
        row = same_rule[0]
        proposal = _proposal("update", row, request_id=request_id, text=text)
        proposal.question = duplicate_question(old_text=row.text, text=text)
        proposal.payload["duplicate"] = True
        return Validation(proposal=proposal, step="duplikat", details={"directive_id": row.pk})
    similar = [row for row in active if is_similar(row.text, text)]
    if similar:
        # Similar rules coexist: "ja" adds the new one beside the old, "nein" adds nothing.
        row = similar[0]
        proposal = _proposal(
            "create", None, request_id=request_id, text=text, context=c.kontext or ""
        )
        proposal.question = similar_question(old_text=row.text, text=text)
        proposal.payload["similar_to"] = row.pk
        return Validation(proposal=proposal, step="aehnlich", details={"directive_id": row.pk})
    restorable = selectors.inactive_restorable(user=user, limit=200)
    same = [r for r in restorable if is_same(r.text, text)] or [
        r for r in restorable if is_similar(r.text, text)
    ]
    if same:
        # seed 000 §6.3: create → reactivate when an inactive matching row exists.
        proposal = _proposal("reactivate", same[0], request_id=request_id)
        proposal.payload["autokorrektur"] = "create"
        return Validation(
            proposal=proposal, step="autokorrektur", details={"directive_id": same[0].pk}
        )
    return Validation(
        proposal=_proposal(
            "create", None, request_id=request_id, text=text, context=c.kontext or ""
        )
    )


def _validate_target(user: User, c: Classification, request_id: str, message: str) -> Validation:
    action = c.action
    if action == "update":
        text = " ".join(c.anweisung.split())
        failed = _check_text(text)
        if failed is not None:
            return failed
        description = c.suche or c.anweisung
    else:
        text = ""
        description = c.suche or c.anweisung or message
    if action == "delete" and c.target_id is None and selectors.means_all(description):
        return _validate_delete_all(user, description, request_id)
    rows, how = _resolve(user, c, active=action != "reactivate", description=description)
    details = {"how": how, "found": len(rows), "ordinal": c.target_ordinal}
    if not rows:
        return _not_found(action, **details)
    if len(rows) > 1:
        return Validation(
            proposal=_choice(action, rows, request_id=request_id, text=text),
            step="auswahl",
            details=details,
        )
    row = rows[0]
    if action == "update" and is_same(row.text, text):
        return Validation(
            result=AgentResult(
                Status.DONE,
                f"Die Direktive {_q(row.text)} lautet schon so. {UNCHANGED}",
                step="schon_vorhanden",
            ),
            step="schon_vorhanden",
        )
    return Validation(
        proposal=_proposal(action, row, request_id=request_id, text=text),
        details={**details, "directive_id": row.pk},
    )


def _validate_delete_all(user: User, description: str, request_id: str) -> Validation:
    """ "Lösch alle meine Regeln" (every active rule) or "alle Emoji-Regeln" (every hit): one
    question naming each rule; "ja" deactivates them all, "nein" none."""
    if selectors.search_terms(description) or selectors.address_object(description):
        rows = selectors.directive_search(user=user, description=description, active=True)
    else:
        rows = list(selectors.directive_list(user=user, active=True))
    details: dict[str, Any] = {"how": "alle", "found": len(rows)}
    if not rows:
        return _not_found("delete", **details)
    if len(rows) == 1:
        return Validation(
            proposal=_proposal("delete", rows[0], request_id=request_id),
            details={**details, "directive_id": rows[0].pk},
        )
    proposal = _delete_many(rows, request_id=request_id)
    return Validation(proposal=proposal, details={**details, "directive_ids": [r.pk for r in rows]})


def undo_plan(user: User) -> tuple[dict[str, Any] | None, str]:
    """What reverts the person's last verified change: ({deactivate, activate, ...}, sentence)."""
    latest = (
        DirectiveStep.objects.filter(user=user, step=DirectiveStep.Step.VERIFIED)
        .order_by("-created_at", "-id")
        .first()
    )
    if latest is None:
        return (
            None,
            "Es gibt keine Änderung an deinen Direktiven, die ich rückgängig machen könnte.",
        )
    if latest.action == "undo":
        return None, "Die letzte Änderung ist schon rückgängig gemacht."
    row = selectors.directive_get(user=user, directive_id=latest.directive_id or 0)
    if row is None:
        return None, "Die letzte Änderung lässt sich nicht mehr zuordnen."
    plan: dict[str, Any] = {"of_step": latest.pk, "of_action": latest.action}
    if latest.action in ("create", "reactivate") and row.active:
        plan.update(deactivate=[row.pk], activate=[])
        description = f"die Direktive {_q(row.text)} wieder entfernen"
    elif latest.action == "delete" and not row.active:
        # One request may have deleted several rules ("Lösch alle meine Regeln"): all return.
        ids = list(
            DirectiveStep.objects.filter(
                user=user,
                request_id=latest.request_id,
                step=DirectiveStep.Step.VERIFIED,
                action="delete",
            )
            .order_by("created_at", "id")
            .values_list("directive_id", flat=True)
        )
        rows = [
            r
            for r in (selectors.directive_get(user=user, directive_id=i or 0) for i in ids)
            if r is not None and not r.active
        ] or [row]
        plan.update(deactivate=[], activate=[r.pk for r in rows])
        if len(rows) == 1:
            description = f"die Direktive {_q(row.text)} wiederherstellen"
        else:
            description = f"die Direktiven {_listed([r.text for r in rows])} wiederherstellen"
    elif latest.action == "update" and row.active and row.replaces_id:
        old = selectors.directive_get(user=user, directive_id=row.replaces_id, active=False)
        if old is None:
            return None, "Die Direktive vor der letzten Änderung finde ich nicht mehr."
        plan.update(deactivate=[row.pk], activate=[old.pk])
        description = f"{_q(row.text)} wieder durch {_q(old.text)} ersetzen"
    else:
        return None, "Die letzte Änderung lässt sich nicht mehr rückgängig machen."
    question = (
        f"Ich soll die letzte Änderung rückgängig machen und {description}. Soll ich das so machen?"
    )
    plan["question"] = question
    return plan, question


def _validate_undo(user: User, request_id: str) -> Validation:
    plan, sentence = undo_plan(user)
    if plan is None:
        return Validation(
            result=AgentResult(Status.DONE, f"{sentence} {UNCHANGED}", step="nichts_zu_tun"),
            step="nichts_zu_tun",
        )
    payload = {
        "action": "undo",
        "request_id": request_id,
        "deactivate": plan["deactivate"],
        "activate": plan["activate"],
        "of_step": plan["of_step"],
    }
    return Validation(proposal=Proposal("undo", plan["question"], payload), details=payload)


def validate(
    *, user: User, classification: Classification, request_id: str, message: str = ""
) -> Validation:
    c = classification
    if c.action == "rejected":
        text = "Das habe ich nicht als Auftrag für deine Direktiven verstanden. " + UNCHANGED
        return Validation(
            result=AgentResult(Status.REJECTED, text, step="rejected", data={"grund": c.grund}),
            step="rejected",
        )
    if c.action == "read":
        return _read(user)
    if c.action == "undo":
        return _validate_undo(user, request_id)
    if c.action == "create":
        return _validate_create(user, c, request_id)
    return _validate_target(user, c, request_id, message)
