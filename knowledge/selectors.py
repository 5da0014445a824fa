"""Reads of the library and the edits, always for a pair or a person (never by id alone).

``library_search`` is the shape the later per-turn context source ([EIGENES WISSEN]) plugs into:
the turn vector and the turn text in, typed hits with file and version out; dense (cosine over
the topic embedding, an absolute floor) and lexical (``german`` + ``simple`` full text, and the
hit must also match the row's keywords — seed 004 v0.15: rarity is not relevance), fused by
rank (RRF), at most K. ``library_candidates`` is the return path's view: the nearest rows by
cosine, no floor — they are only candidates, the planner decides (seed 004 v0.10).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from conversation.models import Character, MemoryEntry
from knowledge import conf
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun

if TYPE_CHECKING:
    from django.contrib.auth.models import User

CHANNEL_DENSE = "dicht"
CHANNEL_LEXICAL = "lexikalisch"
CHANNEL_BOTH = "beide"
_TABLE = KnowledgeEntry._meta.db_table
# Lexical candidates whose keywords are checked (best full-text rank first).
LEXICAL_POOL = 60


@dataclass
class LibraryHit:
    entry_id: int
    path: str
    topic: str
    summary: str
    version: str
    keywords: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    cosine: float | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    matched_keywords: list[str] = field(default_factory=list)
    fused: float = 0.0
    rank: int = 0

    @property
    def channel(self) -> str:
        if self.dense_rank is not None and self.lexical_rank is not None:
            return CHANNEL_BOTH
        return CHANNEL_DENSE if self.dense_rank is not None else CHANNEL_LEXICAL


@dataclass
class LibrarySearch:
    hits: list[LibraryHit]
    log: dict[str, Any]


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in vector) + "]"


def _dense(
    user_id: int, character_id: int, vector: list[float], limit: int
) -> list[tuple[int, float]]:
    # MATERIALIZED: filter by the pair first and scan exactly; pgvector 0.6 HNSW filters after
    # the index scan and can return nothing for a small pair among many rows.
    sql = f"""
        WITH c AS MATERIALIZED (
            SELECT id, topic_embedding <=> %s::vector AS d FROM {_TABLE}
            WHERE user_id = %s AND character_id = %s AND topic_embedding IS NOT NULL
        )
        SELECT id, 1 - d FROM c ORDER BY d, id LIMIT %s
    """
    with connection.cursor() as cur:
        cur.execute(sql, [_vector_literal(vector), user_id, character_id, limit])
        return [(int(r[0]), float(r[1])) for r in cur.fetchall()]


def _lexical(user_id: int, character_id: int, text: str, limit: int) -> list[tuple[int, list[str]]]:
    sql = f"""
        WITH de AS (
          SELECT l FROM unnest(tsvector_to_array(to_tsvector('german', %(t)s))) l
          WHERE length(l) >= 3
        ), si AS (
          SELECT l FROM unnest(tsvector_to_array(to_tsvector('simple', %(t)s))) l
          WHERE length(l) >= 3 AND to_tsvector('german', l) <> ''::tsvector
        ), q AS (
          SELECT nullif(array_to_string(ARRAY(SELECT quote_literal(l) FROM de), ' | '), '')
                   AS de,
                 nullif(array_to_string(ARRAY(SELECT quote_literal(l) FROM si), ' | '), '')
                   AS si
        ), cand AS (
          SELECT e.id, e.keywords,
                 -- ts_rank, not ts_rank_cd: measured 3x cheaper at 10,000 rows (bench).
                 coalesce(ts_rank(e.search_vector, q.de::tsquery), 0)
                   + coalesce(ts_rank(e.search_vector_simple, q.si::tsquery), 0) AS fts,
                 q.de, q.si
          FROM {_TABLE} e, q
          WHERE e.user_id = %(u)s AND e.character_id = %(c)s
            AND (e.search_vector @@ q.de::tsquery OR e.search_vector_simple @@ q.si::tsquery)
          -- The keyword check below costs a to_tsvector per keyword and row: it runs on the
          -- best-ranked pool only, not on every row that shares a common word (a turn's text
          -- is long; at 10,000 rows the check on all matches took a second).
          ORDER BY fts DESC, e.id
          LIMIT %(pool)s
        )
        SELECT id, ARRAY(SELECT k FROM unnest(keywords) k
                         WHERE to_tsvector('german', k) @@ de::tsquery
                            OR to_tsvector('simple', k) @@ si::tsquery) AS matched, fts
        FROM cand
        ORDER BY fts DESC, id
    """
    with connection.cursor() as cur:
        cur.execute(sql, {"t": text, "u": user_id, "c": character_id, "pool": LEXICAL_POOL})
        rows = cur.fetchall()
    return [(int(r[0]), list(r[1])) for r in rows if r[1]][:limit]


def _hydrate(hits: list[LibraryHit]) -> list[LibraryHit]:
    rows = {
        e.pk: e
        for e in KnowledgeEntry.objects.filter(pk__in=[h.entry_id for h in hits]).only(
            "id", "path", "topic", "summary", "version", "keywords", "block_map"
        )
    }
    for hit in hits:
        row = rows[hit.entry_id]
        hit.path, hit.topic, hit.summary, hit.version = (
            row.path,
            row.topic,
            row.summary,
            row.version,
        )
        hit.keywords = list(row.keywords)
        hit.headings = [
            str(b.get("heading") or "")
            for b in row.block_map or []
            if b.get("kind") == "section" and b.get("heading")
        ]
    return hits


def library_candidates(
    *, user: User, character: Character, vector: list[float], k: int
) -> list[LibraryHit]:
    """The pair's ``k`` nearest library rows by cosine, best first (no floor)."""
    dense = _dense(user.pk, character.pk, vector, k)
    hits = [
        LibraryHit(entry_id=eid, path="", topic="", summary="", version="", cosine=cos,
                   dense_rank=n, rank=n)
        for n, (eid, cos) in enumerate(dense, start=1)
    ]  # fmt: skip
    return _hydrate(hits)


def library_search(
    *,
    user: User,
    character: Character,
    vector: list[float] | None,
    text: str,
    k: int = 3,
    floor: float | None = None,
) -> LibrarySearch:
    """Hybrid search over the pair's library (see the module docstring)."""
    started = time.perf_counter()
    floor = conf.dense_floor() if floor is None else floor
    candidates = max(3 * k, 10)
    log: dict[str, Any] = {"floor": round(floor, 4)}
    hits: dict[int, LibraryHit] = {}
    rrf_k = int(settings.FILES_RRF_K)
    if vector is not None:
        dense = _dense(user.pk, character.pk, vector, candidates)
        log["dense_best"] = round(dense[0][1], 4) if dense else None
        passed = [(eid, cos) for eid, cos in dense if cos >= floor]
        log["dense_passed"] = len(passed)
        for n, (eid, cos) in enumerate(passed, start=1):
            hit = hits.setdefault(eid, LibraryHit(eid, "", "", "", ""))
            hit.cosine, hit.dense_rank = cos, n
            hit.fused += 1.0 / (rrf_k + n)
    text = (text or "")[:300]
    if text.strip():
        lexical = _lexical(user.pk, character.pk, text, candidates)
        log["lexical_passed"] = len(lexical)
        for n, (eid, matched) in enumerate(lexical, start=1):
            hit = hits.setdefault(eid, LibraryHit(eid, "", "", "", ""))
            hit.lexical_rank, hit.matched_keywords = n, matched
            hit.fused += 1.0 / (rrf_k + n)
    ordered = sorted(hits.values(), key=lambda h: (-h.fused, h.dense_rank or 10**6, h.entry_id))
    ordered = ordered[:k]
    for n, hit in enumerate(ordered, start=1):
        hit.rank = n
    log["hits"] = len(ordered)
    log["worst_cosine"] = min((h.cosine for h in ordered if h.cosine is not None), default=None)
    log["ms"] = round((time.perf_counter() - started) * 1000, 2)
    return LibrarySearch(hits=_hydrate(ordered), log=log)


# --- the person's views (API) -------------------------------------------------------------


def entry_list(*, user: User) -> QuerySet[KnowledgeEntry]:
    return KnowledgeEntry.objects.filter(user=user).order_by("path", "id")


def entry_get(*, user: User, entry_id: int) -> KnowledgeEntry | None:
    return KnowledgeEntry.objects.filter(user=user, pk=entry_id).first()


def edit_list(*, user: User) -> QuerySet[KnowledgeEdit]:
    return (
        KnowledgeEdit.objects.filter(user=user)
        .exclude(outcome=KnowledgeEdit.Outcome.VERWORFEN)
        .order_by("-created_at", "-id")
    )


def edit_get(*, user: User, edit_id: int) -> KnowledgeEdit | None:
    return KnowledgeEdit.objects.filter(user=user, pk=edit_id).first()


# --- the return path's queue -------------------------------------------------------------


def memories_pending_rueckweg(*, limit: int | None = None) -> list[int]:
    """Ids of promoted long-term memories without a decision and with fewer than
    ``KNOWLEDGE_RUECKWEG_MAX_ATTEMPTS`` failed runs, oldest promotion first. A system job over
    all pairs (like the watcher's beat), so it takes no user."""
    decided = RueckwegRun.objects.filter(abschliessend=True).values("memory_key")
    qs = (
        MemoryEntry.objects.filter(kind=MemoryEntry.Kind.LONG, promoted_at__isnull=False)
        .exclude(pk__in=decided)
        .order_by("promoted_at", "id")
        .values_list("pk", flat=True)
    )
    failed: dict[int, int] = {}
    for key in RueckwegRun.objects.filter(outcome=RueckwegRun.Outcome.FEHLER).values_list(
        "memory_key", flat=True
    ):
        failed[key] = failed.get(key, 0) + 1
    limit_attempts = conf.rueckweg_max_attempts()
    ids = [pk for pk in qs if failed.get(pk, 0) < limit_attempts]
    return ids[:limit] if limit else ids


# --- the re-opener (seed 004 v0.9 §5.2a) ----------------------------------------------------

SOURCE_CHANGED = "Quelle geändert seit dem Lernen"
SOURCE_GONE = "Quelle nicht mehr vorhanden"


@dataclass(frozen=True)
class SourceState:
    """One learned source of a knowledge file, compared with the file index now."""

    path: str
    lines: str
    hash: str
    root_id: int | None
    changed: bool
    gone: bool

    @property
    def label(self) -> str:
        if self.gone:
            return SOURCE_GONE
        return SOURCE_CHANGED if self.changed else ""


def source_states(*, user: User, entries: list[KnowledgeEntry]) -> dict[int, list[SourceState]]:
    """For each entry, its learned sources with the gap computed against the index: a source
    whose ``inhalt_hash`` differs from ``zuletzt_gelernt_hash`` (or from the hash the entry
    learned) is changed until it is relearned; a source no longer present is gone. One query
    for all entries; only the requesting person's index rows are read."""
    from files.models import FileRoot, IndexEntry

    wanted: set[str] = set()
    for entry in entries:
        for src in entry.sources or []:
            if isinstance(src, dict) and src.get("path"):
                wanted.add(str(src["path"]))
    rows: dict[tuple[int, int | None, str], list[Any]] = {}
    if wanted:
        for row in IndexEntry.objects.filter(
            root__user=user, rel_path__in=sorted(wanted)
        ).values_list(
            "root__character_id", "root_id", "rel_path", "inhalt_hash", "zuletzt_gelernt_hash",
            "state", "root__state",
        ):  # fmt: skip
            rows.setdefault((row[0], row[1], row[2]), []).append(row)
            rows.setdefault((row[0], None, row[2]), []).append(row)
    out: dict[int, list[SourceState]] = {}
    for entry in entries:
        states: list[SourceState] = []
        for src in entry.sources or []:
            if not isinstance(src, dict) or not src.get("path"):
                continue
            root_id = src.get("root_id") if isinstance(src.get("root_id"), int) else None
            path, learned = str(src["path"]), str(src.get("hash") or "")
            found = rows.get((entry.character_id, root_id, path)) or []
            present = [
                r for r in found
                if r[5] == IndexEntry.State.PRESENT and r[6] == FileRoot.State.ACTIVE
            ]  # fmt: skip
            gone = not present
            changed = bool(present) and any(
                r[3] != (r[4] or "") or (learned and r[3] != learned) for r in present
            )
            states.append(
                SourceState(
                    path=path,
                    lines=str(src.get("lines") or ""),
                    hash=learned,
                    root_id=root_id,
                    changed=changed,
                    gone=gone,
                )
            )
        out[entry.pk] = states
    return out


def entries_with_changed_sources(*, user: User, entries: list[KnowledgeEntry]) -> set[int]:
    return {
        pk
        for pk, states in source_states(user=user, entries=entries).items()
        if any(s.changed or s.gone for s in states)
    }
