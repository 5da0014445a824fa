"""The person's form of address (du / Sie) for every text Nova sends, not only the model's.

Nova's own texts (questions of the gate, errors, notes, UI sentences) are written in du-form;
``for_person`` gives them in the form the person's standing rules demand, ``say`` picks between
two explicit wordings (preferred for the app's fixed texts: no rewrite can get every German
sentence right). Which form the rules demand, an app that knows it tells conversation through
``register_address_resolver`` (directives: an active "Sieze mich" rule); conversation imports
no such app.

``to_sie`` / ``to_du`` rewrite a sentence deterministically: pronouns, the verb beside the
pronoun, reflexives ("fühlst du dich" → "fühlen Sie sich") and the common imperatives at the
start of a sentence. Quoted text („…“, "…", `…`) and paths are never touched: a quoted rule or a
file name is not Nova addressing anyone. ``has_du`` / ``has_formal_sie`` are the checks the
stream guard and the tribunal use, with the same exceptions.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)


class AddressForm(StrEnum):
    DU = "du"
    SIE = "sie"


AddressResolver = Callable[["User"], "AddressForm | None"]

_RESOLVERS: dict[str, AddressResolver] = {}


def register_address_resolver(name: str, resolver: AddressResolver) -> None:
    """Add (or, under the same name, replace) a source of the person's form of address; it
    answers ``None`` when it has no opinion."""
    _RESOLVERS[name] = resolver


def unregister_address_resolver(name: str) -> None:
    _RESOLVERS.pop(name, None)


def demanded_form(user: User | None) -> AddressForm | None:
    """The form a standing rule of the person demands, or ``None`` when no rule says anything
    (then Nova speaks as her character does, and nothing is enforced)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    for name, resolver in _RESOLVERS.items():
        try:
            form = resolver(user)
        except Exception:
            # A broken resolver must not cost the person the message; it is named in the log.
            logger.exception("address resolver failed", extra={"resolver": name})
            continue
        if form is not None:
            return form
    return None


def address_form(user: User | None) -> AddressForm:
    """The form the person's rules demand; du when no resolver knows better (or no person)."""
    return demanded_form(user) or AddressForm.DU


def siezen(user: User | None) -> bool:
    """True when Nova must say "Sie" to this person (the template variable ``siezen``)."""
    return address_form(user) is AddressForm.SIE


def say(du: str, sie: str, *, user: User | None = None, form: AddressForm | None = None) -> str:
    """One of two explicit wordings of a fixed text, in the person's form of address."""
    wanted = form if form is not None else address_form(user)
    return sie if wanted is AddressForm.SIE else du


def for_person(
    text: str,
    *,
    user: User | None = None,
    form: AddressForm | None = None,
    sie: str | None = None,
) -> str:
    """``text`` (du-form) in the person's form of address; ``sie`` is the explicit Sie
    wording where the automatic rewrite would miss an imperative."""
    wanted = form if form is not None else address_form(user)
    if wanted is AddressForm.DU:
        return text
    return sie if sie is not None else to_sie(text)


# --- detection ---------------------------------------------------------------------------------

# Spans that are not Nova's own words: quotations, inline code, paths, addresses.
_PROTECTED = re.compile(
    r"„[^“”\"]*[“”\"]|\"[^\"\n]*\"|»[^«]*«|«[^»]*»|‚[^‘’]*[‘’]|(?<!\w)'[^'\n]+'(?!\w)"
    r"|`[^`]*`|\S*[/\\@_]\S*"
)
_DU_WORDS = frozenset("du dich dir dein deine deinen deinem deiner deines".split())
_SIE_WORDS = frozenset("Sie Ihnen Ihr Ihre Ihren Ihrem Ihrer Ihres".split())
_WORD = re.compile(r"[A-Za-zÄÖÜäöüß]+")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;–—\n]\s*|^\W+)$")


def _protected(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _PROTECTED.finditer(text)]


def _free_words(text: str) -> list[re.Match[str]]:
    spans = _protected(text)
    return [m for m in _WORD.finditer(text) if not any(a <= m.start() < b for a, b in spans)]


def _at_sentence_start(text: str, pos: int) -> bool:
    return bool(_SENTENCE_START.search(text[:pos]))


def has_du(text: str) -> bool:
    """Nova says du/dich/dir/dein… in ``text`` (outside quotes and paths)."""
    return any(m.group(0).lower() in _DU_WORDS for m in _free_words(text))


def has_formal_sie(text: str) -> bool:
    """Nova says the formal Sie/Ihnen/Ihr… in ``text``. A "Sie" that opens a sentence may be
    "she"/"they" and does not count; "Ihnen" and a capitalised "Ihr…" inside it do."""
    for m in _free_words(text):
        word = m.group(0)
        if word in _SIE_WORDS and not _at_sentence_start(text, m.start()):
            return True
    return False


# --- du → Sie ----------------------------------------------------------------------------------

_PRONOUNS = {
    "du": "Sie",
    "dich": "Sie",
    "dir": "Ihnen",
    "dein": "Ihr",
    "deine": "Ihre",
    "deinen": "Ihren",
    "deinem": "Ihrem",
    "deiner": "Ihrer",
    "deines": "Ihres",
}
_VERBS = {
    "hast": "haben",
    "bist": "sind",
    "kannst": "können",
    "willst": "wollen",
    "weißt": "wissen",
    "musst": "müssen",
    "darfst": "dürfen",
    "sollst": "sollen",
    "magst": "mögen",
    "liest": "lesen",
    "siehst": "sehen",
    "gibst": "geben",
    "nimmst": "nehmen",
    "wirst": "werden",
    "hattest": "hatten",
    "warst": "waren",
    "möchtest": "möchten",
    "könntest": "könnten",
    "würdest": "würden",
    "solltest": "sollten",
    "müsstest": "müssten",
    "wolltest": "wollten",
    "konntest": "konnten",
    "tust": "tun",
    "isst": "essen",
    "vergisst": "vergessen",
    "heißt": "heißen",
    "sitzt": "sitzen",
    "fährst": "fahren",
    "läufst": "laufen",
    "schläfst": "schlafen",
    "trägst": "tragen",
    "hältst": "halten",
    "lässt": "lassen",
    "sprichst": "sprechen",
    "hilfst": "helfen",
    "triffst": "treffen",
    "wirfst": "werfen",
    "brichst": "brechen",
    "fängst": "fangen",
    "wäschst": "waschen",
}
# Lowercase words ending in -st that are no verbs.
_NOT_VERBS = frozenset(
    "selbst sonst erst fast meist zuerst längst jüngst einst umsonst fest best zumindest "
    "höchst nächst zunächst just ernst angst lust list rast mist frist last kost".split()
)
# du-imperatives at the start of a sentence → the infinitive (+ "Sie"); the nouns among them
# ("Versuch", "Teil", "Ruf") only when an object or particle follows, as in an order.
_IMPERATIVES = {
    "antworte": "antworten",
    "antwort": "antworten",
    "schreib": "schreiben",
    "schreibe": "schreiben",
    "sag": "sagen",
    "sage": "sagen",
    "frag": "fragen",
    "schick": "schicken",
    "schicke": "schicken",
    "gib": "geben",
    "nimm": "nehmen",
    "lies": "lesen",
    "probier": "probieren",
    "probiere": "probieren",
    "entschuldige": "entschuldigen",
    "nenn": "nennen",
    "nenne": "nennen",
    "sieh": "sehen",
    "schau": "schauen",
    "warte": "warten",
    "wart": "warten",
    "lass": "lassen",
    "denk": "denken",
    "mach": "machen",
    "melde": "melden",
    "meld": "melden",
    "hör": "hören",
    "erzähl": "erzählen",
    "erzähle": "erzählen",
    "merk": "merken",
    "bleib": "bleiben",
    "komm": "kommen",
    "prüf": "prüfen",
    "prüfe": "prüfen",
    "öffne": "öffnen",
    "versuch": "versuchen",
    "teil": "teilen",
    "ruf": "rufen",
}
_AMBIGUOUS_IMPERATIVES = frozenset({"versuch", "teil", "ruf"})
_ORDER_FOLLOWERS = frozenset("es sie ihn das mich mir mal doch bitte einfach uns".split())
_CLAUSE_BREAK = re.compile(r"[,.;:!?–—()\n]")


def _cap(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _verb_to_sie(word: str) -> str | None:
    lower = word.lower()
    if lower in _VERBS:
        out = _VERBS[lower]
    elif lower in _NOT_VERBS or not lower.endswith("st") or len(lower) <= 4:
        return None
    elif lower.endswith(("ierst",)):
        out = lower[:-2] + "en"  # "probierst" → "probieren"
    elif lower.endswith(("erst", "elst")):
        out = lower[:-2] + "n"  # "erinnerst" → "erinnern", "sammelst" → "sammeln"
    elif lower.endswith("est") and lower[-4:-3] in {"t", "d", "n", "m"}:
        out = lower[:-3] + "en"  # "arbeitest" → "arbeiten", "findest" → "finden"
    elif lower.endswith(("zt", "ßt", "xt")):
        out = lower[:-1] + "en"
    else:
        out = lower[:-2] + "en"  # "machst" → "machen"
    return _cap(out, word)


def _clause_has(tokens: list[str], upto: int, wanted: set[str]) -> bool:
    """Whether a word of ``wanted`` stands in the clause before token ``upto``."""
    for i in range(upto - 1, -1, -1):
        if _CLAUSE_BREAK.search(tokens[i]):
            return False
        if tokens[i].lower() in wanted:
            return True
    return False


_TOKEN = re.compile(r"[A-Za-zÄÖÜäöüß]+|[^A-Za-zÄÖÜäöüß]+")


def _tokens(text: str) -> tuple[list[str], list[bool]]:
    """Word and gap tokens, and for each whether it is free (not quoted, no path)."""
    spans = _protected(text)
    tokens: list[str] = []
    free: list[bool] = []
    for m in _TOKEN.finditer(text):
        tokens.append(m.group(0))
        free.append(not any(a <= m.start() < b for a, b in spans))
    return tokens, free


def _word_index(tokens: list[str], free: list[bool]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t[:1].isalpha() and free[i]]


def _starts_sentence(tokens: list[str], i: int) -> bool:
    before = "".join(tokens[:i])
    return bool(_SENTENCE_START.search(before)) or bool(
        re.search(r"(?:^|[.!?:;–—\n]\s*)bitte\s+$", before, re.IGNORECASE)
    )


def to_sie(text: str) -> str:
    """du-form → Sie-form: pronouns, the verb beside "du", reflexives, and imperatives at the
    start of a sentence. Quoted text and paths stay as they are."""
    tokens, free = _tokens(text)
    words = _word_index(tokens, free)
    out = list(tokens)
    ordered: set[int] = set()  # imperatives turned into "… Sie"
    for pos, i in enumerate(words):
        word = tokens[i]
        lower = word.lower()
        nxt = tokens[words[pos + 1]] if pos + 1 < len(words) else ""
        if lower in _IMPERATIVES and nxt not in {"Sie", "du"} and _starts_sentence(tokens, i):
            if lower in _AMBIGUOUS_IMPERATIVES and nxt.lower() not in _ORDER_FOLLOWERS:
                continue
            out[i] = _cap(_IMPERATIVES[lower], word) + " Sie"
            ordered.add(i)
            continue
        if lower not in _PRONOUNS:
            continue
        ordered_here = any(
            k < i and not _CLAUSE_BREAK.search("".join(tokens[k + 1 : i])) for k in ordered
        )
        if lower in {"dich", "dir"} and (_clause_has(tokens, i, {"du"}) or ordered_here):
            out[i] = "sich"  # reflexive: "hast du dir" → "haben Sie sich", "merk dir" → "…sich"
            continue
        out[i] = _PRONOUNS[lower]
        if lower != "du":
            continue
        before = _verb_to_sie(tokens[words[pos - 1]]) if pos > 0 else None
        if before is not None and not _CLAUSE_BREAK.search("".join(tokens[words[pos - 1] : i])):
            out[words[pos - 1]] = before
            continue
        # "wenn du mir erzählst" → the verb may stand a few words later in the clause.
        for j in range(pos + 1, min(pos + 6, len(words))):
            if _CLAUSE_BREAK.search("".join(tokens[words[j - 1] : words[j]])):
                break
            candidate = tokens[words[j]]
            if candidate[:1].isupper() or candidate.lower() in _PRONOUNS:
                continue
            verb = _verb_to_sie(candidate)
            if verb is not None:
                out[words[j]] = verb
                break
    return "".join(out)


# --- Sie → du ----------------------------------------------------------------------------------

_SIE_PRONOUNS = {
    "Ihnen": "dir",
    "Ihr": "dein",
    "Ihre": "deine",
    "Ihren": "deinen",
    "Ihrem": "deinem",
    "Ihrer": "deiner",
    "Ihres": "deines",
}
_VERBS_TO_DU = {sie: du for du, sie in _VERBS.items() if not du.endswith("test")}
_VERBS_TO_DU.update({"sind": "bist", "haben": "hast", "werden": "wirst", "wissen": "weißt"})
_IMPERATIVES_TO_DU = {
    "geben": "gib",
    "nehmen": "nimm",
    "lesen": "lies",
    "sehen": "sieh",
    "entschuldigen": "entschuldige",
    "antworten": "antworte",
    "warten": "warte",
    "öffnen": "öffne",
    "melden": "melde",
}
_ACCUSATIVE_PREPOSITIONS = frozenset("für ohne gegen durch um".split())


def _asks(tokens: list[str], i: int) -> bool:
    """Whether the sentence around token ``i`` is a question (its end is a "?")."""
    for token in tokens[i:]:
        end = re.search(r"[.!?\n]", token)
        if end:
            return end.group(0) == "?"
    return False


def _verb_to_du(word: str) -> str | None:
    lower = word.lower()
    if lower in _VERBS_TO_DU:
        out = _VERBS_TO_DU[lower]
    elif not lower.endswith("en") or len(lower) <= 3:
        if lower.endswith(("ern", "eln")):
            out = lower[:-1] + "st"
        else:
            return None
    elif lower[-3:-2] in {"t", "d"} or lower.endswith(("nen", "men")):
        out = lower[:-2] + "est"  # "arbeiten" → "arbeitest"
    else:
        out = lower[:-2] + "st"  # "machen" → "machst"
    return _cap(out, word)


def to_du(text: str) -> str:
    """Sie-form → du-form for the formal pronouns, the verb beside "Sie" and an imperative
    "Schreiben Sie …" at the start of a sentence. A "Sie" opening a sentence stays (it may be
    "she"); quoted text and paths stay as they are."""
    tokens, free = _tokens(text)
    words = _word_index(tokens, free)
    out = list(tokens)
    for pos, i in enumerate(words):
        word = tokens[i]
        if word in _SIE_PRONOUNS and not _starts_sentence(tokens, i):
            out[i] = _SIE_PRONOUNS[word]
            continue
        if word == "sich" and _clause_has(tokens, i, {"sie"}):
            out[i] = "dich"
            continue
        if word != "Sie" or _starts_sentence(tokens, i):
            continue
        prev = tokens[words[pos - 1]] if pos > 0 else ""
        if prev.lower() in _ACCUSATIVE_PREPOSITIONS:
            out[i] = "dich"
            continue
        out[i] = "du"
        if pos > 0 and _starts_sentence(tokens, words[pos - 1]) and not _asks(tokens, i):
            # "Schreiben Sie mir" → "Schreib mir": the imperative loses its pronoun.
            verb = prev.lower()
            imperative = _IMPERATIVES_TO_DU.get(verb) or (verb[:-2] if verb.endswith("en") else "")
            if imperative:
                out[words[pos - 1]] = _cap(imperative, prev)
                out[i] = ""
                gap = words[pos - 1] + 1
                if gap < i and out[gap].strip() == "":
                    out[gap] = ""
                continue
        conjugated = _verb_to_du(prev) if pos > 0 else None
        if conjugated is not None and not _CLAUSE_BREAK.search("".join(tokens[words[pos - 1] : i])):
            out[words[pos - 1]] = conjugated
            continue
        # "dass Sie da sind": a known verb in the clause, or the verb at its end.
        clause: list[int] = []
        for j in range(pos + 1, min(pos + 7, len(words))):
            if _CLAUSE_BREAK.search("".join(tokens[words[j - 1] : words[j]])):
                break
            clause.append(words[j])
        for k, j in enumerate(clause):
            candidate = tokens[j]
            if not candidate[:1].islower():
                continue
            last = k == len(clause) - 1
            if candidate in _VERBS_TO_DU or (last and _verb_to_du(candidate) is not None):
                out[j] = _verb_to_du(candidate) or candidate
                break
    return "".join(out)
