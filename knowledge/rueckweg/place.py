"""Where in the chosen file the content goes, and whether it adds anything (seed 004 §4b.3:
incorporate at the right place, not at the end — in the seed's measured run the new paragraph
stood between a definition and its evidence).

The place, as a rule: among the sections below the header, the one sharing the most content
stems with the memory (heading and text) is the anchor. The content goes right after it —
unless the anchor is an evidence section (Beleg, Nachweis, Quelle, Messung …): then right
before it, so evidence stays behind what it supports. With no shared stem anywhere, it goes
before the first evidence section, or after the last section when there is none. A planner's
anchor that names exactly one section wins over the rule.

"Adds nothing new": every content stem of the memory is already in the file (or its wording
already stands there) — then the row is only reinforced (seed 004 v0.14, "das Zugehörige
verstärkt").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from knowledge import document, marks
from knowledge.rueckweg.terms import shared, stems_many
from knowledge.structure import block_map, sections

_EVIDENCE = re.compile(
    r"\b(belege?|nachweise?|quellen?|messungen?|gemessen|evidenz|zeugen?)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Place:
    anchor: str | int  # a heading, or the section's ordinal when headings repeat
    position: str  # "nach" | "vor"
    rule: str  # which part of the rule decided, for the log


def is_evidence(heading: str) -> bool:
    return bool(_EVIDENCE.search(heading))


def choose_place(
    text: str, memory_terms: list[str], anchor: str | None = None, position: str | None = None
) -> Place | None:
    """None when the file has no section below its header."""
    lines = text.split("\n")
    head_end = document.header_end(lines)
    body = [b for b in sections(block_map(text)) if b.line_start - 1 >= head_end]
    if not body:
        return None
    headings = [b.heading.strip().casefold() for b in body]

    def ref(i: int) -> str | int:
        heading = body[i].heading
        return heading if headings.count(heading.strip().casefold()) == 1 else body[i].ordinal

    if anchor:
        wanted = anchor.strip().lstrip("#").strip().casefold()
        hits = [i for i, h in enumerate(headings) if h == wanted]
        if len(hits) == 1:
            i = hits[0]
            pos = position or ("vor" if is_evidence(body[i].heading) else "nach")
            return Place(ref(i), pos, "planer")
    texts = [marks.strip_marks("\n".join(lines[b.line_start - 1 : b.line_end])) for b in body]
    scores = [len(shared(memory_terms, terms)) for terms in stems_many(texts)]
    best = max(range(len(body)), key=lambda i: (scores[i], -i))
    if scores[best] > 0:
        if is_evidence(body[best].heading):
            return Place(ref(best), "vor", "vor_beleg")
        return Place(ref(best), "nach", "nach_bestem_abschnitt")
    evidence = [i for i, b in enumerate(body) if is_evidence(b.heading)]
    if evidence:
        return Place(ref(evidence[0]), "vor", "vor_erstem_beleg")
    return Place(ref(len(body) - 1), "nach", "ans_ende")


def _normal(text: str) -> str:
    return " ".join(marks.strip_marks(text).casefold().split())


def adds_nothing(text: str, memory_text: str, memory_terms: list[str]) -> bool:
    if _normal(memory_text) and _normal(memory_text) in _normal(text):
        return True
    if not memory_terms:
        return True
    file_terms = stems_many([marks.strip_marks(text)])[0]
    return len(shared(memory_terms, file_terms)) == len(memory_terms)
