"""Reads of directives. Every function takes the person: no directive is loaded by id alone."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.utils import timezone

from conversation.models import PendingQuestion
from conversation.vocabulary import QuestionKind, QuestionStatus
from directives.models import Directive, DirectiveStep

# Words that say nothing about which directive is meant ("Vergiss die Siez-Regel").
_SEARCH_STOPWORDS = frozenset(
    "der die das den dem des ein eine einen einem einer und oder aber mit von vom zu zum zur "
    "über ueber auf an am im in für fuer bei aus nach vor um mich mir dich dir du ich er sie es "
    "wir ihr uns euch mein meine meinen deine deinen dein sein seine nie niemals immer mehr "
    "nicht kein keine keinen wieder bitte ab jetzt sofort regel regeln direktive direktiven "
    "anweisung anweisungen verbot vergiss vergessen lösch lösche löschen loesch loesche "
    "entferne entfernen streich streiche darfst darf sollst soll musst muss kannst kann "
    "reden sprechen sagen sag sprich nenn nenne nennen mach mache machen stelle stell her "
    "rückgängig dass auch noch so wie was the "
    # Words that manage rules, not what a rule is about ("Aktivier die gelöschte Regel
    # wieder", "Lösch alle meine Regeln", "Die Kumpel-Regel brauchst du nicht mehr").
    "alle allen aller sämtliche saemtliche jede jeden jedes gelöschte gelöschten geloeschte "
    "alte alten letzte letzten aktivier aktiviere aktivieren reaktivier reaktiviere "
    "brauchst brauche brauchen gelten gilt ändere änder aendere korrigiere korrigier "
    "ersetze bring bringe hol hole zurück zurueck".split()
)
# "Lösch alle meine Regeln": the description means every rule it names, not one of them.
_ALL_WORDS = frozenset("alle allen sämtliche saemtliche sämtlichen saemtlichen allesamt".split())
_WORD_RE = re.compile(r"[\wäöüß]+", re.IGNORECASE)
_REGEL_SUFFIX_RE = re.compile(r"-?(regel|regeln|direktive|direktiven|verbot)$", re.IGNORECASE)


def directive_list(*, user: User, active: bool | None = None) -> QuerySet[Directive]:
    rows = Directive.objects.filter(user=user)
    if active is not None:
        rows = rows.filter(active=active)
    return rows.order_by("created_at", "id")


def directive_get(*, user: User, directive_id: int, active: bool | None = None) -> Directive | None:
    """The person's row, or None — a foreign and a missing row look the same (seed 000 §4.4)."""
    rows = Directive.objects.filter(user=user, pk=directive_id)
    if active is not None:
        rows = rows.filter(active=active)
    return rows.first()


def inactive_restorable(*, user: User, limit: int = 20) -> list[Directive]:
    """Inactive rows that were deleted (not replaced by an update): candidates to reactivate."""
    return list(
        Directive.objects.filter(user=user, active=False, replaced_by__isnull=True).order_by(
            "-changed_at", "-id"
        )[:limit]
    )


def _stem(word: str) -> str:
    word = word.lower()
    for ending in ("ern", "en", "er", "es", "e", "n", "s"):
        if len(word) - len(ending) >= 4 and word.endswith(ending):
            return word[: -len(ending)]
    return word


def search_terms(text: str) -> list[str]:
    """Content words of a description, stemmed, for the ILIKE search (seed 000 §5.1)."""
    terms: list[str] = []
    for raw in _WORD_RE.findall(text or ""):
        word = _REGEL_SUFFIX_RE.sub("", raw.lower())
        if len(word) < 3 or word in _SEARCH_STOPWORDS:
            continue
        stem = _stem(word)
        if stem not in terms:
            terms.append(stem)
    return terms


def address_object(description: str) -> str | None:
    """The form of address a description names ("Sie", "die Regel mit du", "Siez-Regel",
    "förmlich", "Den Nutzer immer siezen"): "sie" or "du", "anrede" for the rule about the form
    whichever it is, None when the description names none."""
    from directives.tribunal import demanded_form  # tribunal reads the rows through selectors

    words = [w for w in _WORD_RE.findall(description or "") if w.lower() not in _ADDRESS_FRAME]
    if len(words) == 1:
        word = words[0].lower()
        if word in {"sie", "siez", "siezen", "förmlich", "foermlich", "formell"}:
            return "sie"
        if word in {"du", "duz", "duzen", "informell"}:
            return "du"
        if word in {"anrede", "ansprache", "anredeform"}:
            return "anrede"
    return demanded_form(description or "")


_ADDRESS_FRAME = frozenset(
    "der die das den dem mit von zu zur zum über ueber regel regeln direktive anweisung "
    "form".split()
)


def means_all(description: str) -> bool:
    """ "alle meine Regeln", "sämtliche Emoji-Regeln": every rule the description names."""
    return any(w.lower() in _ALL_WORDS for w in _WORD_RE.findall(description or ""))


def _address_rows(*, user: User, form: str, active: bool) -> list[Directive]:
    """The person's rules about the form of address: those demanding ``form`` ("anrede": any)."""
    from directives.tribunal import demanded_form

    rows = Directive.objects.filter(user=user, active=active)
    if not active:
        rows = rows.filter(replaced_by__isnull=True)
    found = []
    for row in rows.order_by("created_at", "id")[:200]:
        demanded = demanded_form(row.text)
        if demanded is not None and form in (demanded, "anrede"):
            found.append(row)
    return found


def directive_search(*, user: User, description: str, active: bool) -> list[Directive]:
    """Rows of the person whose text (or context) contains the most description terms (ILIKE).

    A description naming a form of address ("die Regel mit Sie", "Siez-Regel") finds the rules
    that demand it, however they are worded ("Den Nutzer immer siezen", "Sag Sie zu mir")."""
    form = address_object(description)
    if form is not None:
        hits = _address_rows(user=user, form=form, active=active)
        if hits:
            return hits
    terms = search_terms(description)
    if not terms:
        return []
    condition = Q()
    for term in terms:
        condition |= Q(text__icontains=term) | Q(context__icontains=term)
    rows = Directive.objects.filter(condition, user=user, active=active)
    if not active:
        rows = rows.filter(replaced_by__isnull=True)
    scored: list[tuple[int, Directive]] = []
    for row in rows.order_by("created_at", "id")[:200]:
        haystack = f"{row.text} {row.context}".lower()
        scored.append((sum(1 for term in terms if term in haystack), row))
    if not scored:
        return []
    best = max(score for score, _ in scored)
    return [row for score, row in scored if score == best]


def block_rows(*, user: User) -> list[tuple[str, str]]:
    """All active directives of the person, oldest first (seed 000 §8.2): one query."""
    return list(
        Directive.objects.filter(user=user, active=True)
        .order_by("created_at", "id")
        .values_list("text", "context")
    )


def directive_chain(*, user: User, directive_id: int) -> list[Directive] | None:
    """The whole update chain the row belongs to, oldest first; None if not the person's."""
    row = directive_get(user=user, directive_id=directive_id)
    if row is None:
        return None
    first = row
    seen = {first.pk}
    while first.replaces_id is not None and first.replaces_id not in seen:
        previous = directive_get(user=user, directive_id=first.replaces_id)
        if previous is None:
            break
        first = previous
        seen.add(first.pk)
    chain = [first]
    while True:
        following = Directive.objects.filter(user=user, replaces=chain[-1]).order_by("id").first()
        if following is None or following.pk in {r.pk for r in chain}:
            break
        chain.append(following)
    return chain


def steps_for(*, user: User, directive_ids: list[int]) -> QuerySet[DirectiveStep]:
    return DirectiveStep.objects.filter(user=user, directive_id__in=directive_ids).order_by(
        "created_at", "id"
    )


def pending_get(*, user: User, pending_id: int) -> PendingQuestion | None:
    """One of the person's questions of the directives agent (any state), or None."""
    return (
        PendingQuestion.objects.select_related("character", "session")
        .filter(pk=pending_id, user=user, agent="directives")
        .first()
    )


def pending_open(*, user: User) -> PendingQuestion | None:
    """The person's newest open, unexpired yes/no question of the directives, in whichever
    conversation (a choice question is answered in the chat, by naming the rule)."""
    return (
        PendingQuestion.objects.filter(
            user=user,
            agent="directives",
            kind=QuestionKind.YES_NO,
            status=QuestionStatus.OPEN,
            expires_at__gt=timezone.now(),
        )
        .order_by("-created_at", "-id")
        .first()
    )


@dataclass
class RuleCard:
    """One rule as the rules page shows it: its current row, its update chain (oldest first)
    and every audit step of the requests that touched the chain (oldest first)."""

    row: Directive
    chain: list[Directive]
    steps: list[DirectiveStep]


def _chains(rows: list[Directive]) -> dict[int, list[Directive]]:
    """Each row's chain, keyed by the chain's newest row id; ``replaces`` points back."""
    by_id = {row.pk: row for row in rows}
    successor: dict[int, Directive] = {}
    for row in rows:
        if row.replaces_id is not None and row.replaces_id in by_id:
            successor.setdefault(row.replaces_id, row)
    chains: dict[int, list[Directive]] = {}
    for row in rows:
        if row.pk in successor:
            continue  # not the newest of its chain
        chain = [row]
        seen = {row.pk}
        while chain[0].replaces_id in by_id and chain[0].replaces_id not in seen:
            previous = by_id[chain[0].replaces_id]
            seen.add(previous.pk)
            chain.insert(0, previous)
        chains[row.pk] = chain
    return chains


def rule_cards(*, user: User) -> tuple[list[RuleCard], list[RuleCard]]:
    """(active rules, inactive rules) of the person, each with its history: three queries.

    A rule that was replaced by an update is a former wording of its successor, not a rule of
    its own; an inactive rule is one whose newest row was deleted."""
    rows = list(Directive.objects.filter(user=user).order_by("created_at", "id"))
    chains = _chains(rows)
    ids = [row.pk for row in rows]
    touching = DirectiveStep.objects.filter(user=user, directive_id__in=ids)
    request_ids = set(touching.values_list("request_id", flat=True))
    steps = list(
        DirectiveStep.objects.filter(user=user)
        .filter(Q(directive_id__in=ids) | Q(request_id__in=request_ids))
        .order_by("created_at", "id")
    )
    by_request: dict[str, set[int]] = {}
    for step in steps:
        if step.directive_id is not None:
            by_request.setdefault(step.request_id, set()).add(step.directive_id)
    active: list[RuleCard] = []
    inactive: list[RuleCard] = []
    for chain in chains.values():
        chain_ids = {row.pk for row in chain}
        card = RuleCard(
            row=chain[-1],
            chain=chain,
            steps=[s for s in steps if by_request.get(s.request_id, set()) & chain_ids],
        )
        (active if card.row.active else inactive).append(card)
    inactive.sort(key=lambda c: (c.row.changed_at or c.row.created_at, c.row.pk), reverse=True)
    return active, inactive
