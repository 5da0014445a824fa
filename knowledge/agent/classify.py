"""Step 1: read the person's order into a typed request (no model call).

Routing (the router asks this agent first, priority 5): only orders that name *her own*
knowledge come here, so plain questions about released files stay with the files read agent
("Was steht in meinen Notizen über X?" — *meine* notes are the person's records) and a plain
"Was weißt du über X?" stays a conversation turn, where [EIGENES WISSEN], [GEDAECHTNIS] and
[AUFZEICHNUNGEN] all answer together on the turn vector. The markers:

- fragen:  "Was weißt du über X in deinem Wissen?", "Was steht in deinen Wissensdateien über
           X?", "Was hast du dir über X gemerkt?", "… in deinen Notizen / deiner Bibliothek"
- loeschen: "Lösch den Absatz über X aus deinem Wissen" (entfernen/streichen; Absatz,
           Abschnitt, Teil, Stelle, Passage)
- lernen:  "Lies dir brennen.md durch und merk dir das Wichtigste", "Lern aus brennen.md",
           "Merk dir das Wichtigste aus brennen.md"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FILE = r"(?P<file>[\w./-]+\.\w{1,5})"
_FILE2 = _FILE.replace("file", "file2")
_FILE3 = _FILE.replace("file", "file3")
_ABOUT = r"(?:über|ueber|zu|zum|zur|von|mit)"
_MINE = (
    r"deine[mnrs]?\s+(?:eigenen?\s+)?(?:wissen|wissensdatei(?:en)?|notizen|bibliothek"
    r"|wissensordner)"
)

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "lernen",
        re.compile(
            rf"\b(?:lies|lese)\s+(?:dir\s+)?(?:die\s+datei\s+)?{_FILE}\s+durch\b"
            rf"|\blern(?:e)?\s+(?:etwas\s+)?(?:aus|von)\s+(?:der\s+datei\s+)?{_FILE2}"
            rf"|\bmerk\s+dir\s+(?:das\s+wichtigste|was\s+wichtig\s+ist)\s+(?:aus|von|in)\s+"
            rf"(?:der\s+datei\s+)?{_FILE3}",
            re.IGNORECASE,
        ),
    ),
    (
        "loeschen",
        re.compile(
            rf"\b(?:lösch|loesch|entfern|streich)\w*\b.*?\b(?:absatz|abschnitt|teil|stelle"
            rf"|passage)\s+{_ABOUT}\s+(?P<query>.+?)\s+(?:aus|in)\s+{_MINE}\b",
            re.IGNORECASE,
        ),
    ),
    (
        "fragen",
        re.compile(
            rf"\bwas\s+(?:wei(?:ß|ss)t|hast|findest)\s+du\s+(?:denn\s+)?{_ABOUT}\s+(?P<query>.+?)"
            rf"\s+(?:in|aus)\s+{_MINE}\b",
            re.IGNORECASE,
        ),
    ),
    (
        "fragen",
        re.compile(
            rf"\bwas\s+steht\s+in\s+{_MINE}\s+{_ABOUT}\s+(?P<query>.+?)\s*[?.!]*\s*$",
            re.IGNORECASE,
        ),
    ),
    (
        "fragen",
        re.compile(
            rf"\bwas\s+hast\s+du\s+dir\s+{_ABOUT}\s+(?P<query>.+?)\s+gemerkt\b",
            re.IGNORECASE,
        ),
    ),
]


@dataclass(frozen=True)
class KnowledgeRequest:
    kind: str  # fragen | loeschen | lernen
    query: str = ""
    file: str = ""


def _clean(query: str) -> str:
    return query.strip().strip("„“\"'").strip()


def classify(text: str) -> KnowledgeRequest | None:
    for kind, pattern in _PATTERNS:
        match = pattern.search(text or "")
        if match is None:
            continue
        groups = match.groupdict()
        file = groups.get("file") or groups.get("file2") or groups.get("file3") or ""
        query = _clean(groups.get("query") or "")
        if kind == "lernen" and file:
            return KnowledgeRequest(kind=kind, file=file)
        if kind in {"fragen", "loeschen"} and query:
            return KnowledgeRequest(kind=kind, query=query[:300])
    return None
