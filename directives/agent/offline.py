"""The offline classifier: German patterns instead of a model (DESIGN.md "offline backend").

It answers with the same JSON the model would give, so the checked readers run on it too.
"""

from __future__ import annotations

import json
import re
from typing import Any

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


def _distil(text: str) -> str:
    rule = _strip(text)
    plain = " ".join(_POLITE_RE.sub(" ", rule).split()).strip(" ,")
    for pattern, template in REWRITES:
        match = pattern.match(plain)
        if match is not None:
            groups = {k: (v or "") for k, v in match.groupdict().items()}
            return template.format(**{"x": "", "y": "", **groups})
    return rule[:1].upper() + rule[1:]


# "Ändere die Regel: auch kein Hase", "Ändere die Milch-Regel: Sprich nie von Käse".
_AMEND_RE = re.compile(
    r"^\W*(?:bitte\s+)?(?:änder|ändere|aender|aendere|ergänze|ergaenze|erweitere|erweiter)\s+"
    r"(?:bitte\s+)?(?:die|diese|deine|meine|unsere)\s+(?P<name>[\wäöüß-]*?)-?"
    r"(?:regel|direktive|anweisung)(?:\s+(?:mit|zu|über|ueber|zur|zum)\s+(?:der\s+|dem\s+|den\s+)?"
    r"(?P<about>[\wäöüß-]+))?\s*(?::|,|-|–|zu|in)\s*(?P<new>.+?)\s*$",
    re.IGNORECASE,
)


def _amend_target(hints: dict[str, Any], needle: str) -> dict[str, Any] | None:
    """The active row the change means: the one naming ``needle``, else the newest one."""
    rows = [r for r in hints.get("directives") or [] if r.get("active")]
    if needle:
        lowered = needle.lower().strip("-")
        hits = [r for r in rows if lowered[:5] in str(r.get("text") or "").lower()]
        return hits[-1] if len(hits) == 1 else None
    return rows[-1] if rows else None


def _amended_text(old: str, new: str) -> str:
    new = _strip(new)
    if re.match(r"^(auch|und|außerdem|ausserdem|zusätzlich|zusaetzlich)\b", new, re.IGNORECASE):
        # An addition keeps the rule and adds to it (seed 000 §5: "auch kein Hase").
        return f"{_strip(old)}, {new[:1].lower()}{new[1:]}"
    return _distil(new)


def _naming_rule(text: str) -> bool:
    return bool(_NAMING_RE.search(text)) and not _NEGATION_RE.search(text)


def _naming_target(hints: dict[str, Any]) -> int | None:
    """The ordinal of the active naming rule the model would see as ``[n]``, if there is one."""
    for row in hints.get("directives") or []:
        if row.get("active") and _naming_rule(str(row.get("text") or "")):
            return int(row["n"])
    return None


def classify_offline(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    text = str(hints.get("text") or "")
    history = list(hints.get("history") or [])
    answer: dict[str, Any] = {"action": "create", "target_id": None, "kontext": None}
    quoted = [q.strip() for q in _QUOTED_RE.findall(text)]
    if detect.is_read(text):
        answer["action"] = "read"
    elif detect.is_undo(text):
        answer["action"] = "undo"
    elif (amend := _AMEND_RE.match(text)) is not None and len(quoted) < 2:
        needle = amend.group("about") or amend.group("name") or ""
        row = _amend_target(hints, needle)
        if row is None:
            answer.update(action="update", suche=needle or text, anweisung=_distil(amend["new"]))
        else:
            answer.update(
                action="update",
                target_id=int(row["n"]),
                anweisung=_amended_text(str(row.get("text") or ""), amend.group("new")),
            )
    elif _RESTORE_RE.search(text):
        answer.update(action="reactivate", suche=quoted[0] if quoted else text)
    elif _DELETE_RE.search(text) or detect.ends_rule(text):
        answer.update(action="delete", suche=quoted[0] if quoted else text)
    elif _UPDATE_RE.search(text) and len(quoted) >= 2:
        answer.update(action="update", suche=quoted[0], anweisung=quoted[1])
    elif _naming_rule(text) and (target := _naming_target(hints)) is not None:
        answer.update(action="update", target_id=target, anweisung=_distil(text))
    elif _COMPLIMENT_RE.search(text) or (text.rstrip().endswith("?") and not detect.detect(text)):
        answer.update(action="rejected", grund="kein Auftrag, sondern eine Bemerkung oder Frage")
    else:
        rule = _distil(text)
        answer["anweisung"] = rule
        answer["kontext"] = implicit_context(rule, text, history)
    return json.dumps(answer, ensure_ascii=False)


def implicit_context(rule: str, text: str, history: list[dict[str, str]]) -> str | None:
    """seed 000 §4.1: an implicit order ("Sag das nie mehr!") keeps what it refers to — Nova's
    last reply, as plain context shown in the confirmation question (never an order)."""
    if _QUOTED_RE.findall(text) or not _REFERS_BACK_RE.search(rule):
        return None
    last_nova = next((m["content"] for m in reversed(history) if m["role"] == "assistant"), "")
    return f"Bezieht sich auf Novas Aussage: {last_nova[:200]}" if last_nova else None
