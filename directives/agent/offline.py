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
    r"\bwieder\s+(her|zurück|zurueck|ein)\b|\bwiederherstell\w*|\breaktivier\w*", re.IGNORECASE
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


def _distil(text: str) -> str:
    rule = _LEAD_RE.sub("", text.strip())
    rule = re.sub(r"[\s!.]+$", "", rule)
    return rule[:1].upper() + rule[1:]


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
    elif _RESTORE_RE.search(text):
        answer.update(action="reactivate", suche=quoted[0] if quoted else text)
    elif _DELETE_RE.search(text):
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
        last_nova = next((m["content"] for m in reversed(history) if m["role"] == "assistant"), "")
        if last_nova and _REFERS_BACK_RE.search(rule) and not quoted:
            # seed 000 §4.1: an implicit order ("Sag das nie mehr!") keeps what it refers to.
            answer["kontext"] = f"Bezieht sich auf Novas Aussage: {last_nova[:200]}"
    return json.dumps(answer, ensure_ascii=False)
