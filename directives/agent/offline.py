"""The offline classifier: German patterns instead of a model (DESIGN.md "offline backend").

It answers with the same JSON the model would give, so the checked readers run on it too.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from directives import selectors, tribunal
from directives.agent import detect

_QUOTED_RE = re.compile(r"[\"'„“‚‘«»]([^\"'„“”‚‘’«»]{1,200})[\"'“”‘’«»]")
_DELETE_RE = re.compile(
    r"\b(vergiss|vergesse|lösch\w*|loesch\w*|entfern\w*|streich\w*|heb\w*\s.*\bauf)\b"
    r"|\bdu\s+darfst\s+(?:\w+\s+){0,3}?wieder\b|\bgilt\s+nicht\s+mehr\b",
    re.IGNORECASE,
)
_RESTORE_RE = re.compile(
    r"\bwieder\s+(her|zurück|zurueck|ein)\b|\bwiederherstell\w*|\breaktivier\w*"
    r"|\baktivier\w*\b.*\bwieder\b",
    re.IGNORECASE,
)
_UPDATE_RE = re.compile(r"\b(änder\w*|aender\w*|ersetz\w*)\b", re.IGNORECASE)
_COMPLIMENT_RE = re.compile(r"^\s*du\s+(bist|warst|machst|hast)\b.*\b(immer|nie)\b", re.IGNORECASE)
_REFERS_BACK_RE = re.compile(r"\b(das|dies|so was|sowas|so etwas|damit|davon)\b", re.IGNORECASE)
# "Nenn mich ab jetzt Boss": how the person wants to be called. Without a negation it is a
# naming rule, and a new one replaces the old (seed 000 §4.2 [FACHSPRACHE]: update of the
# form of address); "Nenn mich nie Schatz" is a ban and stays a create.
_NAMING_RE = re.compile(r"\b(nenn|nenne|nennt)\s+mich\b", re.IGNORECASE)
_NEGATION_RE = re.compile(r"\b(nie|niemals|nicht|kein\w*|nimmer)\b", re.IGNORECASE)
_LEAD_RE = re.compile(r"^\s*(nova\s*,\s*|bitte\s*,?\s*|hey\s*,?\s*)+", re.IGNORECASE)


_POLITE_RE = re.compile(r"(?:^|\s*,?\s+)bitte\b\s*,?", re.IGNORECASE)
_WORD = r"[\wäöüßÄÖÜ-]+"
# seed 000 §4.1: the rule is stored distilled, the person's imperative stays in the
# audit step (the classified step keeps the message). A small table for the common forms; a
# form it does not know keeps the imperative without its lead and end signs.
REWRITES: list[tuple[re.Pattern[str], str]] = [
    (  # "Sag nie wieder Schatz zu mir" → "Nutzer nicht Schatz nennen"
        re.compile(
            rf"^(?:sag|sage)\s+(?:nie|niemals|nicht)(?:\s+(?:wieder|mehr))?\s+(?P<x>{_WORD}(?:\s+{_WORD})?)"
            r"\s+zu\s+mir$",
            re.IGNORECASE,
        ),
        "Nutzer nicht {x} nennen",
    ),
    (  # "Nenn mich nie (wieder) Schatz" → "Nutzer nicht Schatz nennen"
        re.compile(
            rf"^(?:nenn|nenne)\s+mich\s+(?:nie|niemals|nicht)(?:\s+(?:wieder|mehr))?\s+(?P<x>{_WORD})$",
            re.IGNORECASE,
        ),
        "Nutzer nicht {x} nennen",
    ),
    (  # "Ich möchte, dass du mich siezt" / "Sieze mich ab sofort" → "Den Nutzer immer siezen"
        re.compile(
            r"^(?:ich\s+(?:möchte|moechte|will|wünsche\s+mir|wuensche\s+mir|hätte\s+gern),?\s+"
            r"dass\s+du\s+mich\s+(?:ab\s+(?:jetzt|sofort)\s+|immer\s+)?siezt"
            r"|(?:ab\s+(?:jetzt|sofort)\s+)?siez(?:e)?\s+mich(?:\s+ab\s+(?:jetzt|sofort))?)$",
            re.IGNORECASE,
        ),
        "Den Nutzer immer siezen",
    ),
    (  # "Ich möchte, dass du mich duzt" / "Duz mich" → "Den Nutzer duzen"
        re.compile(
            r"^(?:ich\s+(?:möchte|moechte|will),?\s+dass\s+du\s+mich\s+duzt"
            r"|(?:ab\s+(?:jetzt|sofort)\s+)?duz(?:e)?\s+mich(?:\s+ab\s+(?:jetzt|sofort))?)$",
            re.IGNORECASE,
        ),
        "Den Nutzer duzen",
    ),
    (  # "Keine Emojis mehr" / "Nie wieder Emojis" → "Keine Emojis verwenden"
        re.compile(
            rf"^(?:(?:ab\s+sofort|ab\s+jetzt|künftig)\s+)?"
            rf"(?:keine?n?\s+(?P<x>{_WORD})\s+mehr|(?:nie\s+wieder|nie\s+mehr|schluss\s+mit|"
            rf"genug\s+mit|weg\s+mit)\s+(?:den\s+|dem\s+|der\s+)?(?P<y>{_WORD}))$",
            re.IGNORECASE,
        ),
        "Keine {x}{y} verwenden",
    ),
    (  # "Ab sofort auf Englisch antworten" / "Antworte ab jetzt immer auf Englisch"
        re.compile(
            rf"^(?:(?:ab\s+(?:sofort|jetzt)|künftig|kuenftig|von\s+nun\s+an|immer)\s+)+"
            rf"(?:immer\s+)?auf\s+(?P<x>{_WORD})\s+antworten$"
            rf"|^(?:antworte|antwort|schreib|schreibe)\s+(?:mir\s+)?(?:(?:ab\s+(?:sofort|jetzt)|"
            rf"künftig|kuenftig|nur\s+noch|immer)\s+)*auf\s+(?P<y>{_WORD})$",
            re.IGNORECASE,
        ),
        "Immer auf {x}{y} antworten",
    ),
]


def _strip(text: str) -> str:
    rule = _LEAD_RE.sub("", text.strip())
    rule = re.sub(r"[\s!.]+$", "", rule)
    return rule


# The stored rule about the form of address, as tribunal.demanded_form reads it.
ADDRESS_RULES = {"sie": "Den Nutzer immer siezen", "du": "Den Nutzer duzen"}
_ADDRESS_WORD_RE = re.compile(r"[\wäöüßÄÖÜ]+(?:-[\wäöüßÄÖÜ]+)*")
# Words of a message that is only about the form of address ("Sprich mich ab jetzt mit Sie
# an", "Bitte nicht mehr duzen", "Ich möchte gesiezt werden").
_ADDRESS_FILLERS = frozenset(
    """
    mich mir uns zu an ab jetzt sofort heute morgen künftig kuenftig zukünftig fortan immer nur
    noch bitte ruhig einfach doch lieber mal wieder mehr nicht nie niemals kein keine sprich
    sprech sprechen red rede reden redest sprichst sag sage sagen sagst nenn nenne nennen mit
    per beim bei das dem den die der nutzer ansprechen anreden angesprochen angeredet sollst
    kannst darfst musst ich möchte moechte will würde wuerde hätte haette gern gerne wünsche
    wuensche dass von nun in zukunft so sei bleib bleibe behandle behandeln werden wirst hör
    höre hoer auf und form anrede
    """.split()
)
_ADDRESS_MARKS = ("siez", "gesiez", "duz", "geduz", "sie-", "du-")
_ADDRESS_WORDS = frozenset("sie du förmlich foermlich formell informell".split())


def only_address(text: str) -> bool:
    """Does the message say nothing but a form of address?"""
    for word in _ADDRESS_WORD_RE.findall(text):
        low = word.lower()
        if low not in _ADDRESS_FILLERS and not low.startswith(_ADDRESS_MARKS):
            if low not in _ADDRESS_WORDS:
                return False
    return True


def address_rule(text: str) -> str | None:
    """The stored rule for a message that only sets the form of address ("Sag Sie zu mir",
    "Bitte förmlich", "Nicht mehr duzen" → "Den Nutzer immer siezen"), or None. A plain siez/duz
    verb said as wanted ("Sieze mich bitte immer") stays the person's wording; demanded_form
    reads it already."""
    form = tribunal.demanded_form(text)
    if form is None or not only_address(text):
        return None
    marks = [w.lower() for w in _ADDRESS_WORD_RE.findall(text)]
    verbs = [w for w in marks if w.startswith(("siez", "gesiez", "duz", "geduz"))]
    if verbs and all(("sie" if "siez" in w else "du") == form for w in verbs):
        return None
    return ADDRESS_RULES[form]


def _distil(text: str) -> str:
    rule = _strip(text)
    plain = " ".join(_POLITE_RE.sub(" ", rule).split()).strip(" ,")
    address = address_rule(plain)
    if address is not None:
        return address
    for pattern, template in REWRITES:
        match = pattern.match(plain)
        if match is not None:
            groups = {k: (v or "") for k, v in match.groupdict().items()}
            return template.format(**{"x": "", "y": "", **groups})
    # seed 000 §4.1: no "Ab sofort …"/"Bitte …" lead in a stored rule.
    rule = _TIME_LEAD_RE.sub("", rule) or rule
    return rule[:1].upper() + rule[1:]


# -- what the person wants done to which rule -----------------------------------------------------
# Verbs of changing, deleting and restoring a rule, by their stems (du and Sie, with and without
# the -e: "Ändere", "Ändern Sie", "Korrigier", "Pass … an"). A change needs a rule noun
# ("Ergänze deine Antworten mit Quellen" is a new rule, not a change of one).
_RULE_NOUN = r"(?:regel|regeln|direktive|direktiven|anweisung|anweisungen|verbot|verbote)"
_RULE_NOUN_RE = re.compile(rf"{_RULE_NOUN}\b", re.IGNORECASE)
_CHANGE_RE = re.compile(
    r"\b(?:änder\w*|aender\w*|abänder\w*|korrigier\w*|erweiter\w*|ergänz\w*|ergaenz\w*|"
    r"ersetz\w*|anpass\w*|überarbeit\w*|ueberarbeit\w*|umformulier\w*|umschreib\w*|"
    r"verschärf\w*|verschaerf\w*)\b"
    r"|\b(?:pass|passe|passen|schreib|schreibe|schreiben|formulier|formuliere)\b.*\b(?:an|um)\b"
    r"|\b(?:mach|mache|machen)\s+(?:sie\s+)?aus\b",
    re.IGNORECASE,
)
_DELETE_MORE_RE = re.compile(
    r"\bbrauch\w*\s+(?:[\wäöüß]+\s+){0,3}?(?:nicht|nimmer|nie)\s+mehr\b"
    r"|\bnicht\s+mehr\s+(?:nötig|noetig|gebraucht|gewollt|erwünscht|erwuenscht)\b"
    r"|\b(?:kann|soll|muss|darf)\s+(?:jetzt\s+|ruhig\s+|gern\w*\s+)?weg\b|\bweg\s+damit\b"
    r"|\b(?:überflüssig|ueberfluessig|hinfällig|hinfaellig)\b|\babschaff\w*|\bschaff\w*\b.*\bab\b"
    r"|\bdeaktivier\w*|\b(?:nimm|nehm\w*|zieh\w*)\b.*\bzurück\b|\bzurückzieh\w*",
    re.IGNORECASE,
)
_RESTORE_MORE_RE = re.compile(
    r"\b(?:soll|sollen|darf|dürfen|kann|können|muss|müssen)\s+(?:[\wäöüß]+\s+){0,2}?wieder\s+"
    r"(?:gelten|aktiv|an|rein|in\s+kraft)\b"
    r"|\b(?:gilt|gelten)\s+(?:ab\s+(?:jetzt|sofort)\s+)?wieder\b"
    r"|\bwieder\s+(?:in\s+kraft|einführ\w*|einfuehr\w*|einsetz\w*|aktivier\w*|gelten)\b"
    r"|\b(?:bring|bringe|bringen|hol|hole|holen)\b.*\bzurück\b|\bzurück(?:hol|bring)\w*",
    re.IGNORECASE,
)
# "Emoji-Regel", "Emojiregel", "Siez-Direktive": the rule named by the first part of a compound.
_COMPOUND_RE = re.compile(rf"\b(?P<name>[\wäöüßÄÖÜ]+?)-?{_RULE_NOUN}\b", re.IGNORECASE)
# "die Regel mit (den) Emojis", "die Regel über Anglizismen", "die Regel zu Sie".
_PREP_RE = re.compile(
    rf"\b{_RULE_NOUN}\s+(?:mit|über|ueber|zu|zum|zur|von|vom|wegen|gegen|für|fuer|um)\s+"
    r"(?:(?:der|die|das|den|dem|des|ein|einer|einem|meinem|meiner|meinen)\s+)?"
    r"(?P<name>[\wäöüßÄÖÜ-]+)",
    re.IGNORECASE,
)
_NOT_NAMES = frozenset(
    "die der das den dem meine meinen deine deinen alle diese dieser gelöschte geloeschte "
    "alte neue letzte erste zweite dritte spiel haus grund faust".split()
)
_ALL_RE = re.compile(r"\b(?:alle|allen|sämtliche|saemtliche|sämtlichen|allesamt)\b", re.IGNORECASE)
# Leads a stored rule never keeps (seed 000 §4.1): "Ab sofort …", "Von nun an …", "Bitte …".
_TIME_LEAD_RE = re.compile(
    r"^(?:(?:ab\s+(?:sofort|jetzt|heute|morgen)|von\s+(?:nun|jetzt)\s+an|künftig|kuenftig|"
    r"zukünftig|in\s+zukunft|fortan|bitte|nova)\s*,?\s+)+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RuleRef:
    """A rule the person names: ``name`` ("Emoji", "Sie"), where the naming ends in the text."""

    name: str
    end: int


def rule_references(text: str) -> list[RuleRef]:
    """Every rule the message names, in reading order ("Mach aus der Siez-Regel eine
    Duz-Regel" → Siez, Duz)."""
    refs: list[tuple[int, RuleRef]] = []
    for match in _COMPOUND_RE.finditer(text):
        name = match.group("name").strip("-")
        if name and name.lower() not in _NOT_NAMES:
            refs.append((match.start(), RuleRef(name, match.end())))
    for match in _PREP_RE.finditer(text):
        name = match.group("name").strip("-")
        if name and name.lower() not in _NOT_NAMES:
            refs.append((match.start(), RuleRef(name, match.end())))
    return [ref for _start, ref in sorted(refs, key=lambda item: item[0])]


def _address_of_name(name: str) -> str | None:
    form = selectors.address_object(name)
    return form if form in ("sie", "du") else None


def _description(name: str) -> str:
    """What the search is given for a named rule: a form of address by its verb ("Sie" →
    "siezen"), so the search finds the rule however it is worded."""
    form = _address_of_name(name)
    return {"sie": "siezen", "du": "duzen"}.get(form or "", name)


def _rows_named(hints: dict[str, Any], name: str, *, active: bool) -> list[dict[str, Any]]:
    rows = [r for r in hints.get("directives") or [] if bool(r.get("active")) == active]
    form = selectors.address_object(name)
    if form is not None:
        hits = [
            r
            for r in rows
            if (demanded := tribunal.demanded_form(str(r.get("text") or ""))) is not None
            and form in (demanded, "anrede")
        ]
        if hits:
            return hits
    terms = selectors.search_terms(name)
    if not terms:
        return []
    return [r for r in rows if any(t in str(r.get("text") or "").lower() for t in terms)]


def _amend_target(hints: dict[str, Any], needle: str) -> dict[str, Any] | None:
    """The active row the change means: the one naming ``needle``, else the newest one."""
    rows = [r for r in hints.get("directives") or [] if r.get("active")]
    if needle:
        hits = _rows_named(hints, needle, active=True)
        return hits[0] if len(hits) == 1 else None
    return rows[-1] if rows else None


_NEW_LEAD_RE = re.compile(
    r"^[\s:,;.\-–]*(?:bitte\s+)?(?:so\s*,?\s*dass|dahingehend\s*,?\s*dass|dass|zu|in|um|"
    r"folgendermaßen|wie\s+folgt|an)?\b[\s:,\-–]*",
    re.IGNORECASE,
)
_ALLOWED_TAIL_RE = re.compile(
    r"\s+(?:mehr\s+)?(?:erlaubt|gestattet|zulässig|zulaessig|okay|ok)\s+(?:sind|ist|sein|werden|wird)"
    r"(?:\s+sollen)?$",
    re.IGNORECASE,
)
_ADDITION_RE = re.compile(rf"^(?:und|{tribunal.ADDITION_WORDS})\b", re.IGNORECASE)


def _new_part(text: str, after: int) -> str:
    """What the rule shall say after the change: the words after a colon or after the named
    rule ("… so, dass auch keine Smileys erlaubt sind" → "auch keine Smileys")."""
    colon = text.find(":", after if after else 0)
    if colon < 0 and after == 0:
        colon = text.find(":")
    rest = text[colon + 1 :] if colon >= 0 else text[after:]
    rest = _NEW_LEAD_RE.sub("", rest, count=1)
    rest = _strip(rest)
    rest = re.sub(r"\s+an$", "", rest, flags=re.IGNORECASE)  # "Pass die Regel … an"
    return _ALLOWED_TAIL_RE.sub("", rest).strip(" ,")


def _amended_text(old: str, new: str) -> str:
    new = _strip(new)
    if _ADDITION_RE.match(new):
        # An addition keeps the rule and adds to it (seed 000 §5: "auch kein Hase").
        return f"{_strip(old)}, {new[:1].lower()}{new[1:]}"
    return _distil(new)


def _converted_text(old: str, old_name: str, new_name: str) -> str:
    """ "Mach aus der Siez-Regel eine Duz-Regel": the rule about the other form of address, or
    the old rule about the new thing ("aus der Milch-Regel eine Käse-Regel")."""
    form = _address_of_name(new_name)
    if form is not None:
        return ADDRESS_RULES[form]
    stem = selectors.search_terms(old_name)
    if stem and re.search(re.escape(stem[0]), old, re.IGNORECASE):
        return re.sub(rf"\b{re.escape(stem[0])}\w*", new_name, old, count=1, flags=re.IGNORECASE)
    return old


def _update(text: str, hints: dict[str, Any]) -> dict[str, Any]:
    refs = rule_references(text)
    ref = refs[0] if refs else None
    needle = ref.name if ref else ""
    row = _amend_target(hints, needle)
    if len(refs) >= 2 and row is not None:
        new = _converted_text(str(row.get("text") or ""), refs[0].name, refs[1].name)
        return {"action": "update", "target_id": int(row["n"]), "anweisung": new}
    noun = _RULE_NOUN_RE.search(text)
    after = ref.end if ref else (noun.end() if noun else 0)
    new_part = _new_part(text, after)
    if row is None:
        return {
            "action": "update",
            "suche": _description(needle) if needle else text,
            "anweisung": _distil(new_part) if new_part else "",
        }
    return {
        "action": "update",
        "target_id": int(row["n"]),
        "anweisung": _amended_text(str(row.get("text") or ""), new_part) if new_part else "",
    }


def _target_answer(
    action: str, text: str, hints: dict[str, Any], quoted: list[str]
) -> dict[str, Any]:
    """delete / reactivate: the rule the person names, as the search's description."""
    if quoted:
        return {"action": action, "suche": quoted[0]}
    refs = rule_references(text)
    if action == "delete" and _ALL_RE.search(text):
        named = " ".join(_description(r.name) for r in refs)
        return {"action": action, "suche": f"alle {named}".strip() if named else "alle Regeln"}
    if refs:
        return {"action": action, "suche": _description(refs[0].name)}
    if action == "reactivate":
        inactive = [r for r in hints.get("directives") or [] if not r.get("active")]
        if len(inactive) == 1:  # "Aktivier die gelöschte Regel wieder": the one there is
            return {"action": action, "target_id": int(inactive[0]["n"])}
    return {"action": action, "suche": text}


def _naming_rule(text: str) -> bool:
    return bool(_NAMING_RE.search(text)) and not _NEGATION_RE.search(text)


def _naming_target(hints: dict[str, Any]) -> int | None:
    """The ordinal of the active naming rule the model would see as ``[n]``, if there is one."""
    for row in hints.get("directives") or []:
        if row.get("active") and _naming_rule(str(row.get("text") or "")):
            return int(row["n"])
    return None


def _other_address_rule(rule: str, hints: dict[str, Any]) -> int | None:
    """The ordinal of the newest active rule demanding the other form of address, when
    ``rule`` is a rule about the form of address."""
    form = tribunal.demanded_form(rule)
    if form is None or not only_address(rule):
        return None
    for row in reversed(hints.get("directives") or []):
        demanded = tribunal.demanded_form(str(row.get("text") or ""))
        if row.get("active") and demanded is not None and demanded != form:
            return int(row["n"])
    return None


# The actions the understanding layer may decide (conversation.understanding, trained on the
# corpus): its classifier reads the action better than the patterns below (bench_routing.py,
# dev split); the patterns then fill in the action's fields.
UNDERSTOOD_ACTIONS = frozenset({"create", "read", "update", "delete", "reactivate", "undo"})


def _understood_action(text: str) -> str | None:
    from conversation.understanding import understand

    reading = understand(text)
    return reading.intent if reading.intent in UNDERSTOOD_ACTIONS else None


def _answer_for(action: str, text: str, hints: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``action``, read by the same helpers as the patterns' own branches."""
    quoted = [q.strip() for q in _QUOTED_RE.findall(text)]
    if action in {"read", "undo"}:
        return {"action": action, "target_id": None, "kontext": None}
    if action == "update":
        if len(quoted) >= 2:
            return {"action": "update", "suche": quoted[0], "anweisung": quoted[1]}
        return {"target_id": None, "kontext": None, **_update(text, hints)}
    if action in {"delete", "reactivate"}:
        return {"target_id": None, "kontext": None, **_target_answer(action, text, hints, quoted)}
    return _create_answer(text, hints)


def _create_answer(text: str, hints: dict[str, Any]) -> dict[str, Any]:
    """A new rule, distilled; a new form of address replaces the old one, as a new name does
    (seed 000 §4.2)."""
    rule = _distil(text)
    if (other := _other_address_rule(rule, hints)) is not None:
        return {"action": "update", "target_id": other, "anweisung": rule, "kontext": None}
    history = list(hints.get("history") or [])
    return {
        "action": "create",
        "target_id": None,
        "anweisung": rule,
        "kontext": implicit_context(rule, text, history),
    }


def classify_offline(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    text = str(hints.get("text") or "")
    own = _classify_by_patterns(hints)
    action = _understood_action(text)
    if action is None or action == own.get("action"):
        return json.dumps(own, ensure_ascii=False)
    if own.get("action") == "update" and action == "create" and own.get("target_id"):
        # "Nenn mich ab jetzt Boss" with a naming rule in place: the new name replaces the old.
        return json.dumps(own, ensure_ascii=False)
    return json.dumps(_answer_for(action, text, hints), ensure_ascii=False)


def _classify_by_patterns(hints: dict[str, Any]) -> dict[str, Any]:
    text = str(hints.get("text") or "")
    answer: dict[str, Any] = {"action": "create", "target_id": None, "kontext": None}
    quoted = [q.strip() for q in _QUOTED_RE.findall(text)]
    names_rule = bool(_RULE_NOUN_RE.search(text))
    if detect.is_read(text):
        answer["action"] = "read"
    elif detect.is_undo(text):
        answer["action"] = "undo"
    elif _UPDATE_RE.search(text) and len(quoted) >= 2:
        answer.update(action="update", suche=quoted[0], anweisung=quoted[1])
    elif names_rule and _CHANGE_RE.search(text):
        answer.update(_update(text, hints))
    elif _RESTORE_RE.search(text) or (names_rule and _RESTORE_MORE_RE.search(text)):
        answer.update(_target_answer("reactivate", text, hints, quoted))
    elif (
        _DELETE_RE.search(text)
        or detect.ends_rule(text)
        or (names_rule and _DELETE_MORE_RE.search(text))
    ):
        answer.update(_target_answer("delete", text, hints, quoted))
    elif _naming_rule(text) and (target := _naming_target(hints)) is not None:
        answer.update(action="update", target_id=target, anweisung=_distil(text))
    elif _COMPLIMENT_RE.search(text) or (text.rstrip().endswith("?") and not detect.detect(text)):
        answer.update(action="rejected", grund="kein Auftrag, sondern eine Bemerkung oder Frage")
    else:
        answer.update(_create_answer(text, hints))
    return answer


def implicit_context(rule: str, text: str, history: list[dict[str, str]]) -> str | None:
    """seed 000 §4.1: an implicit order ("Sag das nie mehr!") keeps what it refers to — Nova's
    last reply, as plain context shown in the confirmation question (never an order)."""
    if _QUOTED_RE.findall(text) or not _REFERS_BACK_RE.search(rule):
        return None
    last_nova = next((m["content"] for m in reversed(history) if m["role"] == "assistant"), "")
    return f"Bezieht sich auf Novas Aussage: {last_nova[:200]}" if last_nova else None
