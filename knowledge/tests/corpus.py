"""A small knowledge corpus, written through the product's own write layer."""

from __future__ import annotations

from typing import Any

from knowledge.models import KnowledgeEntry
from knowledge.tools import datei_schreiben

FILES: dict[str, tuple[str, str]] = {
    "kennlinie.md": (
        "Sättigung der Kennlinie",
        "### Definition\n\n"
        "Eine Kennlinie sättigt, wenn weitere Last die Ausgangsgröße kaum noch erhöht. "
        "Die Sättigung beginnt am Knick der Kennlinie.\n\n"
        "### Beleg\n\n"
        "Gemessen am 12. März: ab 80 Prozent Last stieg die Ausgangsgröße nur noch um "
        "2 Prozent.",
    ),
    "sauerteig.md": (
        "Sauerteigbrot",
        "### Ansatz\n\n"
        "Ein Sauerteig braucht Mehl, Wasser und Zeit; das Anstellgut wird täglich mit "
        "Roggenmehl gefüttert.\n\n"
        "### Backen\n\n"
        "Das Brot backt 50 Minuten bei 230 Grad im vorgeheizten Ofen.",
    ),
    "harz.md": (
        "Wanderwege im Harz",
        "### Hexenstieg\n\n"
        "Der Hexenstieg führt von Osterode nach Thale über den Brocken, in fünf Etappen.",
    ),
    "tee.md": (
        "Grüner Tee",
        "### Zubereitung\n\nGrüner Tee braucht Wasser von 80 Grad und zieht drei Minuten.",
    ),
}


def make_corpus(user: Any, character: Any) -> dict[str, KnowledgeEntry]:
    entries: dict[str, KnowledgeEntry] = {}
    for path, (thema, inhalt) in FILES.items():
        result = datei_schreiben(
            user=user, character=character, path=path, thema=thema, inhalt=inhalt
        )
        assert result.ok, result
        entries[path] = KnowledgeEntry.objects.get(pk=result.entry_pk)
    return entries
