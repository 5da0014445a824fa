"""One delivered file record as the retrieval hands it to the composer, for the prompt tests."""

from __future__ import annotations

from typing import Any

RECORD: dict[str, Any] = {
    "path": "notizen/hausbau.md",
    "lines": "3-7",
    "citation": "notizen/hausbau.md:3-7",
    "channel": "beide",
    "strength": "stark",
    "size": 2048,
    "eigentum": "nutzer",
    "archived": False,
    "summary": "Termin mit dem Architekten Brenner am Donnerstag um 14 Uhr.",
    "excerpt": "Donnerstag 14 Uhr: Architekt Brenner, Baustelle Lindenweg.",
    "root_id": 1,
    "cosine": 0.61,
}
