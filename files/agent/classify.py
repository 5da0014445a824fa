"""Step 1 of the files agent: is this message an order about released folders, and which one?

Deterministic German patterns, no model call (serves both backends). An order names a folder
(*Ordner*, *Verzeichnis*, *Freigabe*) or a path and one of five actions. A question about the
*contents* of files ("Was steht in meinen Notizen über X?") is not an order: it belongs to the
retrieval agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Action = Literal["release", "list", "suspend", "forget", "reactivate"]


@dataclass(frozen=True)
class Order:
    action: Action
    path: str


_FOLDER = r"(?:ordner|verzeichnis(?:se)?|freigaben?|wurzeln?)"
_PATHLIKE = re.compile(r"(?:^|\s)([~./][^\s]*)")
_QUOTED = re.compile(r"[\"„“”'‚‘’]([^\"„“”'‚‘’]+)[\"„“”'‚‘’]")
_AFTER_FOLDER = re.compile(r"\b(?:ordner|verzeichnis)\s+([^\s]+)", re.IGNORECASE)

_LIST = [
    re.compile(rf"\bwelche\s+(?:\w+\s+)?{_FOLDER}\b"),
    re.compile(rf"\b(?:zeig|liste|nenn)\w*\s+(?:mir\s+)?(?:\w+\s+)?{_FOLDER}\b"),
    re.compile(r"\bwas\s+(?:hast\s+du|ist)\s+(?:alles\s+)?freigegeben\b"),
]
_RELEASE = [
    re.compile(r"\b(?:gib|gebe|geb)\b.*\bfrei\b"),
    re.compile(r"\bfreigeben\b"),
]
_SUSPEND = [re.compile(r"\b(?:leg|lege)\b.*\bstill\b"), re.compile(r"\bstill(?:l)?egen\b")]
_FORGET = [
    re.compile(r"\bvergiss\b"),
    re.compile(r"\b(?:vergessen|entziehen|entzieh|zurückziehen)\b"),
]
_REACTIVATE = [
    re.compile(r"\bnimm\b.*\bwieder\s+auf\b"),
    re.compile(r"\bwieder\s+aufnehmen\b"),
    re.compile(r"\breaktivier\w*\b"),
]


def extract_path(text: str) -> str:
    """The folder the order names: a quoted name, a path-like token, or the word after
    *Ordner*/*Verzeichnis*. Trailing punctuation is not part of it."""
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted.group(1).strip()
    pathlike = _PATHLIKE.search(text)
    if pathlike:
        return pathlike.group(1).rstrip(".,;:!?")
    after = _AFTER_FOLDER.search(text)
    if after:
        word = after.group(1).rstrip(".,;:!?")
        if word.lower() not in {"frei", "still", "wieder", "nova", "dir", "mir"}:
            return word
    return ""


def classify(text: str) -> Order | None:
    lowered = " ".join(text.lower().split())
    names_folder = bool(re.search(rf"\b{_FOLDER}\b", lowered))
    path = extract_path(text)
    if any(p.search(lowered) for p in _LIST) and not path:
        return Order("list", "")
    if not names_folder and not _PATHLIKE.search(text):
        return None
    if any(p.search(lowered) for p in _REACTIVATE):
        return Order("reactivate", path)
    if any(p.search(lowered) for p in _SUSPEND):
        return Order("suspend", path)
    if any(p.search(lowered) for p in _FORGET):
        return Order("forget", path)
    if any(p.search(lowered) for p in _RELEASE):
        return Order("release", path)
    if any(p.search(lowered) for p in _LIST):
        return Order("list", "")
    return None


def detect(text: str) -> bool:
    return classify(text) is not None
