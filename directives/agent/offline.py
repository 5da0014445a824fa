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
_LEAD_RE = re.compile(r"^\s*(nova\s*,\s*|bitte\s*,?\s*|hey\s*,?\s*)+", re.IGNORECASE)


def _distil(text: str) -> str:
    rule = _LEAD_RE.sub("", text.strip())
    rule = re.sub(r"[\s!.]+$", "", rule)
    return rule[:1].upper() + rule[1:]


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
