"""Per-turn retrieval over the pair's released files (seed 002 §2/§3.0, seed 004 v0.13/v0.15).

The enricher path: every turn, no model call, the turn's ONE vector (the same vector memory and
library use — never a second embedding of the same text). Hybrid search (``files.search``) picks
at most K files; for each, the best block (the one the block channels found, else the best of its
block map) gives the citation (path:lines) and the excerpt: the text of exactly those lines,
read through the resolved-path-checked reader (``files.reading``), line by line — CSV rows and
list items stay separate lines — bounded by lines, never cut in the middle of a line
but a very long one. The file's summary travels separately (``summary``): it is about the whole
file, not about the cited lines.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.db import connection

from conversation.models import Character
from files import reading
from files.models import IndexBlock, IndexEntry, IndexRun
from files.search import Hit, _vector_literal, hybrid_search

if TYPE_CHECKING:
    from django.contrib.auth.models import User

# The excerpt shows at most this many non-blank lines of the cited block (the rest is said to
# be cut, with the lines shown), and a single line longer than EXCERPT_LINE_CHARS is cut at a
# word boundary with " …" (a PDF paragraph can be one line).
EXCERPT_MAX_LINES = 12
EXCERPT_LINE_CHARS = 400
# A block whose text contains a query stem that is also a keyword of the file wins over a block
# that is merely closer in embedding space (measured: "Schrühbrand" question → the Glasurbrand
# block by cosine alone).
BLOCK_KEYWORD_BONUS = 0.15


@dataclass(frozen=True)
class RetrievalResult:
    # Each record: path, lines ("a-b"), citation ("path:a-b"), channel ("dicht"/"lexikalisch"/
    # "beide"), strength ("stark"/"mittel"/"schwach"), size, eigentum, archived, summary (of the
    # whole file), excerpt (the cited lines, joined by "\n"), excerpt_lines ("a-b" shown),
    # excerpt_cut, root_id, cosine (float | None).
    records: list[dict[str, Any]] = field(default_factory=list)
    # For PipelineLog: hits, channels, worst_cosine, ms, ...
    log: dict[str, Any] = field(default_factory=dict)


def records_for_turn(
    *, user: User, character: Character, query_vector: list[float] | None, text: str
) -> RetrievalResult:
    """At most K records of the pair's active roots for this turn; [] when nothing is relevant.

    ``query_vector`` is the turn vector computed once by the enricher; None (embedding failed)
    leaves the lexical channel alone working.
    """
    started = time.perf_counter()
    outcome = hybrid_search(user=user, character=character, query_vector=query_vector, text=text)
    records = records_from_hits(
        user=user,
        character=character,
        hits=outcome.hits,
        query_vector=query_vector,
        stems=outcome.query_lexemes,
    )
    cosines = [r["cosine"] for r in records if r["cosine"] is not None]
    log: dict[str, Any] = {
        "hits": len(records),
        "channels": [r["channel"] for r in records],
        "citations": [r["citation"] for r in records],
        "worst_cosine": round(min(cosines), 4) if cosines else None,
        "ms": round((time.perf_counter() - started) * 1000, 2),
        **outcome.log,
    }
    return RetrievalResult(records=records, log=log)


def records_from_hits(
    *,
    user: User,
    character: Character,
    hits: list[Hit],
    query_vector: list[float] | None,
    stems: list[str],
) -> list[dict[str, Any]]:
    if not hits:
        return []
    entries = {
        e.id: e
        for e in IndexEntry.objects.filter(id__in=[h.entry_id for h in hits]).select_related("root")
    }
    block_scores = _block_cosines([h.entry_id for h in hits], query_vector)
    # Folders still being read: what was found there may not be all there is (one query).
    still_reading = set(
        IndexRun.objects.filter(
            root_id__in={e.root_id for e in entries.values()},
            state__in=[IndexRun.State.WAITING, IndexRun.State.RUNNING],
        ).values_list("root_id", flat=True)
    )
    records: list[dict[str, Any]] = []
    for hit in hits:
        entry = entries[hit.entry_id]
        blocks = reading.block_map_of(entry)
        read = reading.zeilen_lesen(
            user=user,
            character=character,
            path=entry.rel_path,
            start=1,
            end=None,
            root_id=entry.root_id,
        )
        lines = read.text.splitlines() if read.ok else []
        best = next((b for b in blocks if b["ordinal"] == hit.block_ordinal), None)
        if best is None:
            best = _best_block(entry, blocks, lines, block_scores, stems)
        start, end = (best["line_start"], best["line_end"]) if best else (1, entry.line_count or 1)
        excerpt = Excerpt(text="", line_start=start, line_end=start - 1, cut=False)
        if read.ok and end > len(lines) and start > 0:
            # The whole-file read stops at FILES_READ_MAX_LINES: read the block itself.
            part = reading.zeilen_lesen(
                user=user,
                character=character,
                path=entry.rel_path,
                start=start,
                end=end,
                root_id=entry.root_id,
            )
            if part.ok:
                padded = [""] * (start - 1) + part.text.splitlines()
                excerpt = excerpt_of(padded, start, end)
        elif read.ok:
            excerpt = excerpt_of(lines, start, end)
        records.append(
            {
                "entry_id": entry.id,
                "root_id": entry.root_id,
                "path": entry.rel_path,
                "lines": f"{start}-{end}",
                "citation": f"{entry.rel_path}:{start}-{end}",
                "heading": (best or {}).get("heading", ""),
                "channel": hit.channel,
                "strength": hit.strength,
                "rank": hit.rank,
                "size": entry.size,
                "eigentum": entry.root.eigentum,
                "archived": bool(entry.archived),
                "concept": _is_concept(entry),
                "topic": entry.topic,
                "summary": entry.summary,
                "excerpt": excerpt.text,
                "excerpt_lines": f"{excerpt.line_start}-{excerpt.line_end}" if excerpt.text else "",
                "excerpt_cut": excerpt.cut,
                "changed": read.changed,
                "readable": read.ok,
                "cosine": round(hit.cosine, 4) if hit.cosine is not None else None,
                "keywords_matched": hit.matched_keywords,
            }
        )
        if entry.root_id in still_reading:
            records[-1]["folder_still_indexing"] = True
    return records


@dataclass(frozen=True)
class Excerpt:
    text: str  # the shown lines, joined by "\n"
    line_start: int
    line_end: int  # the last line shown (< the block's end when cut)
    cut: bool


def excerpt_of(lines: list[str], start: int, end: int) -> Excerpt:
    """The text of lines ``start``..``end`` (1-based, inclusive) line by line: trailing blanks
    and runs of blank lines collapsed, at most EXCERPT_MAX_LINES non-blank lines."""
    shown: list[str] = []
    last = start - 1
    kept = 0
    cut = False
    for number in range(max(1, start), min(end, len(lines)) + 1):
        line = lines[number - 1].rstrip()
        if not line.strip():
            if shown and shown[-1] != "":
                shown.append("")
            continue
        if kept == EXCERPT_MAX_LINES:
            cut = True
            break
        if len(line) > EXCERPT_LINE_CHARS:
            line = line[: EXCERPT_LINE_CHARS - 1].rsplit(" ", 1)[0] + " …"
        shown.append(line)
        kept += 1
        last = number
    while shown and shown[-1] == "":
        shown.pop()
    first = next((n for n in range(max(1, start), last + 1) if lines[n - 1].strip()), max(1, start))
    return Excerpt(text="\n".join(shown), line_start=first, line_end=last, cut=cut)


def _block_cosines(
    entry_ids: list[int], query_vector: list[float] | None
) -> dict[tuple[int, int], float]:
    if query_vector is None:
        return {}
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT entry_id, ordinal, 1 - (embedding <=> %s::vector) "
            f"FROM {IndexBlock._meta.db_table} "
            "WHERE entry_id = ANY(%s) AND embedding IS NOT NULL",
            [_vector_literal(query_vector), entry_ids],
        )
        return {(int(e), int(o)): float(c) for e, o, c in cur.fetchall()}


def _best_block(
    entry: IndexEntry,
    blocks: list[dict[str, Any]],
    lines: list[str],
    scores: dict[tuple[int, int], float],
    stems: list[str],
) -> dict[str, Any] | None:
    if not blocks:
        return None
    keyword_stems = [
        s
        for s in stems
        if len(s) >= 4 and any(s in k.casefold() or k.casefold() in s for k in entry.keywords)
    ]

    def score(block: dict[str, Any]) -> float:
        body = "\n".join(lines[block["line_start"] - 1 : block["line_end"]]).casefold()
        body += "\n" + (block.get("heading") or "").casefold()
        bonus = sum(BLOCK_KEYWORD_BONUS for s in keyword_stems if s in body)
        # A title-only block (heading and nothing else) is a poor citation.
        # A title block (heading + intro) is a poor citation when the file has sections.
        short = block["line_end"] - block["line_start"] < 3
        size_penalty = 0.05 if short and len(blocks) > 1 else 0.0
        return scores.get((entry.id, block["ordinal"]), 0.0) + bonus - size_penalty

    return max(blocks, key=score)


_CONCEPT = re.compile(r"(konzept|concept|entwurf|spezifikation|design)", re.IGNORECASE)


def _is_concept(entry: IndexEntry) -> bool:
    """A concept document describes, it does not prove (seed 002 §10)."""
    return bool(_CONCEPT.search(entry.rel_path) or _CONCEPT.search(entry.topic or ""))
