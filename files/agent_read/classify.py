"""Request path, step 1: read the person's order into a typed request (no model call).

Patterns (German): "Was steht in meinen Notizen über X?", "Lies mir Abschnitt 3 aus plan.md
vor", "Lies Zeilen 10-20 aus plan.md", "Such nach Schrühbrand", "Worum geht es in plan.md?",
"Zeig mir die Gliederung von plan.md".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FILE = r"(?P<file>[\w./-]+\.\w{1,5})"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "zeilen",
        re.compile(
            rf"\blies\b.*?\bzeilen?\s+(?P<a>\d+)\s*(?:-|–|bis)\s*(?P<b>\d+)\s+(?:aus|in|von)\s+{_FILE}",
            re.IGNORECASE,
        ),
    ),
    (
        "abschnitt",
        re.compile(
            rf"\blies\b.*?\b(?:abschnitt|kapitel|teil)\s+"
            rf"(?P<block>\d+|„[^“]+“|\"[^\"]+\"|[\wäöüßÄÖÜ-]+(?:\s+[\wäöüßÄÖÜ-]+){{0,3}}?)"
            rf"\s+(?:aus|in|von)\s+{_FILE}",
            re.IGNORECASE,
        ),
    ),
    (
        # "Lies mir plan.md vor", "Was steht in plan.md?": the file itself, from line 1
        # (bounded by FILES_READ_MAX_LINES, the cut is said).
        "datei",
        re.compile(
            rf"^\W*(?:bitte\s+)?(?:lies|lese)\s+(?:mir\s+)?(?:bitte\s+)?(?:die\s+datei\s+)?{_FILE}"
            rf"(?:\s+(?:bitte\s+)?(?:vor|durch))?\W*$",
            re.IGNORECASE,
        ),
    ),
    (
        "datei",
        re.compile(
            rf"^\W*was\s+steht\s+(?:denn\s+)?(?:in|im)\s+(?:der\s+datei\s+)?{_FILE}\W*$",
            re.IGNORECASE,
        ),
    ),
    (
        # "Hast du eine Datei namens plan.md?": is it there, and what is it about.
        "ueberblick",
        re.compile(
            rf"\b(?:hast\s+du|gibt\s+es|kennst\s+du)\s+(?:eine|die)\s+datei\s+"
            rf"(?:namens|mit\s+(?:dem\s+)?namen|die\s+)?\s*[„\"']?{_FILE}",
            re.IGNORECASE,
        ),
    ),
    (
        "gliederung",
        re.compile(rf"\b(?:gliederung|aufbau|abschnitte)\b.*?\b{_FILE}", re.IGNORECASE),
    ),
    (
        "ueberblick",
        re.compile(rf"\b(?:worum geht es|was ist)\s+(?:in\s+)?{_FILE}", re.IGNORECASE),
    ),
    (
        "notizen",
        re.compile(
            r"\bwas\s+steht\s+in\s+meinen\s+(?:notizen|unterlagen|dateien|aufzeichnungen)"
            r"\s+(?:über|ueber|zu|zum|zur|von)\s+(?P<query>.+?)\s*\??\s*$",
            re.IGNORECASE,
        ),
    ),
    (
        "suche",
        re.compile(
            r"^\s*(?:bitte\s+)?such(?:e)?\s+(?:in\s+meinen\s+(?:notizen|unterlagen|dateien)\s+)?"
            r"nach\s+(?P<query>.+?)\s*[.!?]?\s*$",
            re.IGNORECASE,
        ),
    ),
]


@dataclass(frozen=True)
class ReadRequest:
    kind: str  # zeilen | abschnitt | gliederung | ueberblick | notizen | suche (datei → zeilen)
    query: str = ""
    file: str = ""
    block: str = ""
    line_start: int = 0
    line_end: int = 0


def classify(text: str) -> ReadRequest | None:
    for kind, pattern in _PATTERNS:
        match = pattern.search(text or "")
        if match is None:
            continue
        groups = match.groupdict()
        query = (groups.get("query") or "").strip().strip("„“\"'")
        if kind in {"notizen", "suche"} and not query:
            continue
        if kind == "datei":
            # The whole file is lines 1.. (zeilen_lesen bounds and says the cut).
            return ReadRequest(
                kind="zeilen", file=groups.get("file") or "", line_start=1, line_end=10**6
            )
        return ReadRequest(
            kind=kind,
            query=query,
            file=groups.get("file") or "",
            block=(groups.get("block") or "").strip('„“"'),
            line_start=int(groups.get("a") or 0),
            line_end=int(groups.get("b") or 0),
        )
    return None
