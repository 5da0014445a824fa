"""The one adapter between the knowledge zone and the file service's parsers.

The block map (``struktur_analysieren``, seed 004 v0.12) and the offline enrichment
(title → topic, first paragraph → summary, TF-IDF → keywords) are shared with ``files``; every
call from ``knowledge`` goes through here, so a change of their signature breaks in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from files.watcher.enrich import extract as _files_extract
from files.watcher.structure import struktur_analysieren as _files_struktur

FORMAT = "md"  # the zone holds Markdown only (knowledge.zone.ALLOWED_SUFFIXES)


@dataclass(frozen=True)
class Block:
    """A block of the map: 1-based inclusive lines. ``ordinal`` numbers the sections 1..n in
    file order (0 for code blocks and tables, which lie inside sections)."""

    kind: str  # "section" | "code" | "table"
    heading: str
    level: int
    line_start: int
    line_end: int
    ordinal: int = 0

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "heading": self.heading,
            "level": self.level,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "ordinal": self.ordinal,
        }


def block_map(text: str) -> list[Block]:
    blocks: list[Block] = []
    n = 0
    for raw in _files_struktur(text, FORMAT):
        kind = str(raw["kind"])
        if kind == "section":
            n += 1
        blocks.append(
            Block(
                kind=kind,
                heading=str(raw.get("heading") or ""),
                level=int(raw.get("level") or 0),
                line_start=int(raw["line_start"]),
                line_end=int(raw["line_end"]),
                ordinal=n if kind == "section" else 0,
            )
        )
    return blocks


def sections(blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.kind == "section"]


def enrichment(text: str, rel_path: str, blocks: list[Block]) -> dict[str, Any]:
    """{topic, summary, keywords} by extraction (no model call)."""
    raw_blocks = [
        {
            "kind": b.kind,
            "heading": b.heading,
            "level": b.level,
            "line_start": b.line_start,
            "line_end": b.line_end,
        }
        for b in blocks
    ]
    data = _files_extract(text, rel_path, raw_blocks)
    return {
        "topic": str(data.get("topic") or ""),
        "summary": str(data.get("summary") or ""),
        "keywords": [str(k) for k in data.get("keywords") or []],
    }
