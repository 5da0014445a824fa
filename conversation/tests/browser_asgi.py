# ruff: noqa: I001  (novaberg.asgi must set Django up before the app imports)
"""The ASGI app that tests/test_browser.py runs under daphne: the real app, plus a tiny asking
agent (a confirmation question to click through) and fixed records for one released root (so a
citation can be opened without running the indexer)."""

from __future__ import annotations

import dataclasses
import os

from novaberg.asgi import application  # noqa: F401  (sets Django up; daphne serves this)

from conversation import agents, context  # noqa: E402
from novaberg import embeddings  # noqa: E402
from tests.note_agent import NoteAgent  # noqa: E402

ROOT_ID = int(os.environ.get("NOVABERG_BROWSER_ROOT_ID", "0"))


def records_for_turn(query: context.SourceQuery) -> context.SourceFound:
    if "Architekt" not in query.text:
        return context.SourceFound(log={"hits": 0})
    record = {
        "path": "hausbau.md",
        "lines": "2-3",
        "citation": "hausbau.md:2-3",
        "channel": "beide",
        "strength": "stark",
        "size": 120,
        "eigentum": "nutzer",
        "archived": False,
        "summary": "Termin mit dem Architekten Brenner am Donnerstag um 14 Uhr.",
        "excerpt": "Donnerstag 14 Uhr: Architekt Brenner",
        "root_id": ROOT_ID,
        "cosine": 0.6,
    }
    return context.SourceFound(items=[record], log={"hits": 1})


agents.register_agent(NoteAgent())
# The real records source (its block, its place), with these fixed records as its search.
_records = context.composer_source("files")
assert _records is not None, "the files app registers its records source"
context.register_composer_source(dataclasses.replace(_records, search=records_for_turn))
embeddings.warm_up()
