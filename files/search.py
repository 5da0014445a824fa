"""Hybrid search over the index rows of a pair's ACTIVE roots (seed 002 §3.0, seed 004 v0.15).

Two channels, fused by rank (RRF), never by averaging two scales:

- dense: cosine over ``topic_embedding``. Restricted to the pair's roots FIRST (a materialized
  CTE, exact scan) while the pair owns few rows; pgvector 0.6 HNSW filters *after* the index
  scan and returned 0 rows in 18 of 20 queries for a small pair among 100k rows. Only a pair
  with many rows goes through HNSW, with ``hnsw.ef_search`` raised. A hit must pass the absolute
  floor (calibrated per embedding model, ``RetrievalCalibration``) and a relative test (it must
  stand out from the pair's own score distribution), so "nothing relevant" stays expressible.
- lexical: PostgreSQL full text in two forms (``german`` stems and ``simple`` words, seed 002
  §8.1b: German compounds need more than one form) plus a compound-part test on keywords. A hit
  must ALSO match the row's extracted keywords (seed 004 v0.15: rarity is not relevance).

Both channels run twice: over the file rows (``IndexEntry``: topic embedding, whole text, the
file's ~8 keywords) and over the block rows (``IndexBlock``: each section's own embedding, text
and keywords; its heading counts as a keyword of the block, DESIGN.md "Files"), so a question can
reach the section that answers it although the file's keywords never name it (a note
with ``## Seladon``). The four ranked lists are collapsed per file and fused by RRF per file;
the best block of a file (its own RRF over the two block lists) becomes the citation.

The per-turn path (``files.retrieval``) and the request path (agent, ``/api/search/``) both call
``hybrid_search``; the request path asks for more than K.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import connection, transaction

from conversation.models import Character
from files.models import FileRoot, IndexBlock, IndexEntry, RetrievalCalibration

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)

CHANNEL_DENSE = "dicht"
CHANNEL_LEXICAL = "lexikalisch"
CHANNEL_BOTH = "beide"


@dataclass
class Hit:
    entry_id: int
    root_id: int
    rel_path: str
    cosine: float | None = None
    dense_rank: int | None = None
    lexical_rank: int | None = None
    lexical_score: float = 0.0
    matched_keywords: list[str] = field(default_factory=list)
    fused: float = 0.0
    rank: int = 0
    # The block that carries the citation, when a block channel found one (else None: the
    # caller picks the best block of the file's block map).
    block_ordinal: int | None = None

    @property
    def channel(self) -> str:
        if self.dense_rank is not None and self.lexical_rank is not None:
            return CHANNEL_BOTH
        return CHANNEL_DENSE if self.dense_rank is not None else CHANNEL_LEXICAL

    @property
    def strength(self) -> str:
        """In words, from rank and channel (seed 004 v0.7: nobody knows the raw cosine's scale):
        both channels → stark; one channel at fused rank 1 → mittel; otherwise schwach."""
        if self.channel == CHANNEL_BOTH:
            return "stark"
        return "mittel" if self.rank == 1 else "schwach"


@dataclass
class SearchOutcome:
    hits: list[Hit]
    log: dict[str, Any]
    query_lexemes: list[str] = field(default_factory=list)


# Block floor of the packaged all-MiniLM-L6-v2 where the calibration row holds none
# (measured on bench/retrieval_set.json over bench/corpus, block text = heading + section):
# the twelve questions without a relevant file reach at most 0.529 (mean gap 0.13, at most
# 0.23); 0.55 and a gap of 0.20 keep all of them out. A calibration row may carry its own
# ``block_floor`` / ``block_margin`` in ``distributions``.
BLOCK_FLOOR_FALLBACK = 0.55
BLOCK_MARGIN_FALLBACK = 0.20


@dataclass(frozen=True)
class Floor:
    value: float
    margin: float
    source: str  # "kalibriert: <model>" or "rueckfall"
    # The block rows' own floor: a section's text lies closer to any question than a file's
    # topic line does (measured on bench/corpus with the packaged MiniLM: unrelated questions
    # reach block cosine 0.53, topic cosine 0.39), so the topic floor would let them through.
    block_value: float = BLOCK_FLOOR_FALLBACK
    block_margin: float = BLOCK_MARGIN_FALLBACK


def active_root_ids(*, user: User, character: Character) -> list[int]:
    """The pair's ACTIVE roots; suspended roots are neither searched nor read."""
    return list(
        FileRoot.objects.filter(
            user=user, character=character, state=FileRoot.State.ACTIVE
        ).values_list("id", flat=True)
    )


def embedding_model_label() -> str:
    from novaberg import embeddings

    return embeddings.backend_label()


def active_floor() -> Floor:
    """The stored calibration for the active embedding model, else the documented fallback
    (settings.FILES_DENSE_FLOOR_FALLBACK, measured on all-MiniLM-L6-v2 + German notes)."""
    label = embedding_model_label()
    row = RetrievalCalibration.objects.filter(embedding_model=label).first()
    if row is not None:
        dist = row.distributions or {}
        margin = dist.get("relative_margin")
        block_floor = dist.get("block_floor")
        block_margin = dist.get("block_margin")
        return Floor(
            value=float(row.dense_floor),
            margin=float(margin if margin is not None else settings.FILES_DENSE_MARGIN_FALLBACK),
            source=f"kalibriert: {label}",
            # Uncalibrated blocks: never below the file rows' own calibrated floor.
            block_value=float(
                block_floor
                if block_floor is not None
                else max(BLOCK_FLOOR_FALLBACK, float(row.dense_floor))
            ),
            block_margin=float(block_margin if block_margin is not None else BLOCK_MARGIN_FALLBACK),
        )
    # A floor from another embedding space is the seed's factor-26 mistake (004 v0.7/v0.8):
    # say so on every turn until the active model is calibrated.
    logger.warning(
        "dense floor: no calibration for %s, using the fallback %.2f; "
        "run `python manage.py calibrate_floor`",
        label,
        settings.FILES_DENSE_FLOOR_FALLBACK,
    )
    return Floor(
        value=float(settings.FILES_DENSE_FLOOR_FALLBACK),
        margin=float(settings.FILES_DENSE_MARGIN_FALLBACK),
        source="rueckfall",
        block_value=BLOCK_FLOOR_FALLBACK,
        block_margin=BLOCK_MARGIN_FALLBACK,
    )


def _vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{v:.7g}" for v in vector) + "]"


_TABLE = IndexEntry._meta.db_table
_BLOCKS = IndexBlock._meta.db_table
_PRESENT = IndexEntry.State.PRESENT.value


def dense_channel(
    *, root_ids: list[int], query_vector: list[float], limit: int
) -> tuple[list[tuple[int, float]], dict[str, Any]]:
    """Top ``limit`` rows by cosine (unfiltered by the floor) and the pair's score stats."""
    info: dict[str, Any] = {"plan": "leer", "pair_rows": 0, "mean_cosine": None}
    if not root_ids:
        return [], info
    vec = _vector_literal(query_vector)
    with connection.cursor() as cur:
        cur.execute(
            f"SELECT count(*) FROM {_TABLE} WHERE root_id = ANY(%s) AND state = %s "
            "AND topic_embedding IS NOT NULL",
            [root_ids, _PRESENT],
        )
        pair_rows = int(cur.fetchone()[0])
    info["pair_rows"] = pair_rows
    if pair_rows == 0:
        return [], info
    if pair_rows <= settings.FILES_EXACT_SCAN_MAX_ROWS:
        info["plan"] = "exakt_gefiltert"
        # MATERIALIZED keeps the planner from pushing the ORDER BY into the HNSW index.
        sql = f"""
            WITH c AS MATERIALIZED (
                SELECT id, topic_embedding <=> %s::vector AS d FROM {_TABLE}
                WHERE root_id = ANY(%s) AND state = %s AND topic_embedding IS NOT NULL
            ), s AS (SELECT avg(d) AS m FROM c)
            SELECT c.id, 1 - c.d, 1 - s.m FROM c, s ORDER BY c.d LIMIT %s
        """
        with connection.cursor() as cur:
            cur.execute(sql, [vec, root_ids, _PRESENT, limit])
            rows = cur.fetchall()
        if rows:
            info["mean_cosine"] = float(rows[0][2])
        return [(int(r[0]), float(r[1])) for r in rows], info
    info["plan"] = "hnsw"
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(_ef_search(limit))])
        cur.execute(
            f"SELECT id, 1 - (topic_embedding <=> %s::vector) FROM {_TABLE} "
            "WHERE root_id = ANY(%s) AND state = %s AND topic_embedding IS NOT NULL "
            "ORDER BY topic_embedding <=> %s::vector LIMIT %s",
            [vec, root_ids, _PRESENT, vec, limit],
        )
        rows = cur.fetchall()
    return [(int(r[0]), float(r[1])) for r in rows], info


def _ef_search(limit: int) -> int:
    # pgvector caps ef_search at 1000.
    return min(1000, max(settings.FILES_HNSW_EF_SEARCH, limit * 4))


# Query terms: German stems and simple words (stop words dropped, at least 3 characters).
_QUERY_SQL = """
    SELECT
      (SELECT array_agg(l) FROM unnest(tsvector_to_array(to_tsvector('german', %(t)s))) l
        WHERE length(l) >= 3),
      (SELECT array_agg(l) FROM unnest(tsvector_to_array(to_tsvector('simple', %(t)s))) l
        WHERE length(l) >= 3 AND to_tsvector('german', l) <> ''::tsvector)
"""


def query_terms(text: str) -> tuple[list[str], list[str]]:
    with connection.cursor() as cur:
        cur.execute(_QUERY_SQL, {"t": text})
        german, simple = cur.fetchone()
    return list(german or []), list(simple or [])


def _or_query(terms: list[str]) -> str | None:
    if not terms:
        return None
    # Lexemes are used as they are (already normalised): quote them as tsquery literals.
    return " | ".join("'" + t.replace("'", "''").replace("\\", "\\\\") + "'" for t in terms)


# German compounds put the head last (Schrüh|brand, Sauerteig|brot): a keyword ending in a query
# word, starting with a longer one, or a query word starting/ending with a keyword counts.
_COMPOUND = """(
    (length(s) >= 5 AND lower(k) LIKE '%%' || s)
    OR (length(s) >= 6 AND lower(k) LIKE s || '%%')
    OR (length(k) >= 5 AND (s LIKE lower(k) || '%%' OR s LIKE '%%' || lower(k)))
)"""


def lexical_channel(
    *,
    root_ids: list[int],
    german: list[str],
    simple: list[str],
    query_vector: list[float] | None,
    limit: int,
    compound_parts: bool = True,
) -> list[tuple[int, float, list[str], float | None]]:
    """Rows matching the full text (either form) AND the row's keywords.

    Returns (id, score, matched keywords, cosine or None), best first. The keyword gate accepts
    a keyword whose German/simple form matches a query term, or — for compounds — a keyword
    that contains a query stem of at least 5 letters or is contained in one.
    """
    qde, qsi = _or_query(german), _or_query(simple)
    if not root_ids or (qde is None and qsi is None):
        return []
    compound = ""
    stems = sorted(set(german) | set(simple))
    if compound_parts and stems:
        compound = f"""
          OR EXISTS (SELECT 1 FROM unnest(e.keywords) k, unnest(%(stems)s::text[]) s
                     WHERE {_COMPOUND})
        """
    cos = "NULL::float8"
    params: dict[str, Any] = {
        "roots": root_ids,
        "present": _PRESENT,
        "qde": qde or "",
        "qsi": qsi or "",
        "stems": stems,
        "limit": limit,
    }
    if query_vector is not None:
        cos = "1 - (e.topic_embedding <=> %(vec)s::vector)"
        params["vec"] = _vector_literal(query_vector)
    sql = f"""
        WITH q AS (
          SELECT CASE WHEN %(qde)s = '' THEN NULL ELSE %(qde)s::tsquery END AS de,
                 CASE WHEN %(qsi)s = '' THEN NULL ELSE %(qsi)s::tsquery END AS si
        ), cand AS (
          SELECT e.id, e.keywords, e.search_vector, e.search_vector_simple, e.topic_embedding
          FROM {_TABLE} e, q
          WHERE e.root_id = ANY(%(roots)s) AND e.state = %(present)s
            AND (e.search_vector @@ q.de OR e.search_vector_simple @@ q.si {compound})
        ), scored AS (
          SELECT cand.id, cand.topic_embedding,
            coalesce(ts_rank_cd(cand.search_vector, q.de), 0)
              + coalesce(ts_rank_cd(cand.search_vector_simple, q.si), 0) AS fts,
            ARRAY(
              SELECT k FROM unnest(cand.keywords) k
              WHERE to_tsvector('german', k) @@ q.de OR to_tsvector('simple', k) @@ q.si
                 OR EXISTS (SELECT 1 FROM unnest(%(stems)s::text[]) s WHERE {_COMPOUND})
            ) AS matched
          FROM cand, q
        )
        SELECT e.id, cardinality(e.matched) + e.fts AS score, e.matched, {cos}
        FROM scored e
        WHERE cardinality(e.matched) > 0
        ORDER BY score DESC, e.id
        LIMIT %(limit)s
    """
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return [
        (int(r[0]), float(r[1]), list(r[2]), float(r[3]) if r[3] is not None else None)
        for r in rows
    ]


BlockHit = tuple[int, int, float]  # (entry id, block ordinal, cosine or lexical score)


def block_dense_channel(
    *, root_ids: list[int], query_vector: list[float], limit: int
) -> tuple[list[BlockHit], dict[str, Any]]:
    """Top ``limit`` block rows of the pair by cosine of the block's own embedding (unfiltered
    by the floor) and the pair's block score stats; the same plan switch as ``dense_channel``:
    filter first (materialized, exact) while the pair owns few block rows, HNSW beyond."""
    info: dict[str, Any] = {"plan": "leer", "pair_rows": 0, "mean_cosine": None}
    if not root_ids:
        return [], info
    vec = _vector_literal(query_vector)
    # The pair's blocks: through its present file rows (blocks carry no root of their own).
    pair_blocks = (
        f"SELECT b.entry_id, b.ordinal, b.embedding FROM {_BLOCKS} b JOIN {_TABLE} e "
        "ON e.id = b.entry_id WHERE e.root_id = ANY(%s) AND e.state = %s "
        "AND b.embedding IS NOT NULL"
    )
    with connection.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM ({pair_blocks}) p", [root_ids, _PRESENT])
        row = cur.fetchone()
    pair_rows = int(row[0]) if row else 0
    info["pair_rows"] = pair_rows
    if pair_rows == 0:
        return [], info
    if pair_rows <= settings.FILES_EXACT_SCAN_MAX_ROWS:
        info["plan"] = "exakt_gefiltert"
        sql = f"""
            WITH c AS MATERIALIZED (
                SELECT p.entry_id, p.ordinal, p.embedding <=> %s::vector AS d
                FROM ({pair_blocks}) p
            ), s AS (SELECT avg(d) AS m FROM c)
            SELECT c.entry_id, c.ordinal, 1 - c.d, 1 - s.m FROM c, s
            ORDER BY c.d, c.entry_id, c.ordinal LIMIT %s
        """
        with connection.cursor() as cur:
            cur.execute(sql, [vec, root_ids, _PRESENT, limit])
            rows = cur.fetchall()
        if rows:
            info["mean_cosine"] = float(rows[0][3])
        return [(int(r[0]), int(r[1]), float(r[2])) for r in rows], info
    info["plan"] = "hnsw"
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(_ef_search(limit))])
        cur.execute(
            f"SELECT b.entry_id, b.ordinal, 1 - (b.embedding <=> %s::vector) FROM {_BLOCKS} b "
            f"WHERE b.embedding IS NOT NULL AND b.entry_id IN (SELECT id FROM {_TABLE} "
            "WHERE root_id = ANY(%s) AND state = %s) "
            "ORDER BY b.embedding <=> %s::vector LIMIT %s",
            [vec, root_ids, _PRESENT, vec, limit],
        )
        rows = cur.fetchall()
    return [(int(r[0]), int(r[1]), float(r[2])) for r in rows], info


def block_lexical_channel(
    *,
    root_ids: list[int],
    german: list[str],
    simple: list[str],
    limit: int,
) -> list[tuple[int, int, float, list[str]]]:
    """Block rows whose OWN text matches the query (either form) AND whose keywords match it:
    the block's extracted keywords plus its heading (a heading is a keyword of its block,
    DESIGN.md "Files"). Returns (entry id, ordinal, score, matched keywords), best first.

    Unlike the file rows, a compound part alone does not make a block a candidate: the block's
    text must contain the query word; the compound test only widens the keyword gate.
    """
    qde, qsi = _or_query(german), _or_query(simple)
    if not root_ids or (qde is None and qsi is None):
        return []
    stems = sorted(set(german) | set(simple))
    params: dict[str, Any] = {
        "roots": root_ids,
        "present": _PRESENT,
        "qde": qde or "",
        "qsi": qsi or "",
        "stems": stems,
        "limit": limit,
    }
    sql = f"""
        WITH q AS (
          SELECT CASE WHEN %(qde)s = '' THEN NULL ELSE %(qde)s::tsquery END AS de,
                 CASE WHEN %(qsi)s = '' THEN NULL ELSE %(qsi)s::tsquery END AS si
        ), cand AS (
          SELECT b.entry_id, b.ordinal, b.search_vector, b.search_vector_simple,
                 array_remove(b.keywords || b.heading::varchar, '') AS keywords
          FROM {_BLOCKS} b JOIN {_TABLE} e ON e.id = b.entry_id, q
          WHERE e.root_id = ANY(%(roots)s) AND e.state = %(present)s
            AND (b.search_vector @@ q.de OR b.search_vector_simple @@ q.si)
        ), scored AS (
          SELECT cand.entry_id, cand.ordinal,
            coalesce(ts_rank_cd(cand.search_vector, q.de), 0)
              + coalesce(ts_rank_cd(cand.search_vector_simple, q.si), 0) AS fts,
            ARRAY(
              SELECT DISTINCT k FROM unnest(cand.keywords) k
              WHERE to_tsvector('german', k) @@ q.de OR to_tsvector('simple', k) @@ q.si
                 OR EXISTS (SELECT 1 FROM unnest(%(stems)s::text[]) s WHERE {_COMPOUND})
            ) AS matched
          FROM cand, q
        )
        SELECT entry_id, ordinal, cardinality(matched) + fts AS score, matched
        FROM scored
        WHERE cardinality(matched) > 0
        ORDER BY score DESC, entry_id, ordinal
        LIMIT %(limit)s
    """
    with connection.cursor() as cur:
        cur.execute(sql, params)
        rows = cur.fetchall()
    return [(int(r[0]), int(r[1]), float(r[2]), list(r[3])) for r in rows]


def _per_file(block_hits: list[tuple[int, int]]) -> list[int]:
    """Files in the order of their best block (first occurrence wins)."""
    seen: dict[int, None] = {}
    for entry_id, _ordinal in block_hits:
        seen.setdefault(entry_id, None)
    return list(seen)


def _best_blocks(
    block_dense: list[BlockHit],
    block_lexical: list[tuple[int, int, float, list[str]]],
    *,
    lexical_weight: float,
    rrf_k: int,
) -> dict[int, int]:
    """Per file, the block with the highest RRF over the two block lists."""
    score: dict[tuple[int, int], float] = {}
    for rank, (entry_id, ordinal, _cos) in enumerate(block_dense, start=1):
        score[(entry_id, ordinal)] = score.get((entry_id, ordinal), 0.0) + 1.0 / (rrf_k + rank)
    for rank, (entry_id, ordinal, _s, _m) in enumerate(block_lexical, start=1):
        key = (entry_id, ordinal)
        score[key] = score.get(key, 0.0) + lexical_weight / (rrf_k + rank)
    best: dict[int, tuple[float, int]] = {}
    for (entry_id, ordinal), value in score.items():
        held = best.get(entry_id)
        if held is None or value > held[0] or (value == held[0] and ordinal < held[1]):
            best[entry_id] = (value, ordinal)
    return {entry_id: ordinal for entry_id, (_v, ordinal) in best.items()}


def fuse(
    dense: list[tuple[int, float]],
    lexical: list[tuple[int, float, list[str], float | None]],
    *,
    lexical_weight: float,
    rrf_k: int,
    block_dense: list[BlockHit] | None = None,
    block_lexical: list[tuple[int, int, float, list[str]]] | None = None,
) -> list[Hit]:
    """Reciprocal rank fusion per FILE: sum of weight / (k + rank) over the lists that found
    the file — file rows by topic embedding and by keywords, block rows by their embedding and
    by their keywords (each block list collapsed to the file's best block)."""
    block_dense = block_dense or []
    block_lexical = block_lexical or []
    hits: dict[int, Hit] = {}

    def hit_of(entry_id: int) -> Hit:
        return hits.setdefault(entry_id, Hit(entry_id=entry_id, root_id=0, rel_path=""))

    for rank, (entry_id, cosine) in enumerate(dense, start=1):
        hit = hit_of(entry_id)
        hit.cosine = cosine
        hit.dense_rank = rank
        hit.fused += 1.0 / (rrf_k + rank)
    for rank, (entry_id, score, matched, lexical_cosine) in enumerate(lexical, start=1):
        hit = hit_of(entry_id)
        if hit.cosine is None:
            hit.cosine = lexical_cosine
        hit.lexical_rank = rank
        hit.lexical_score = score
        hit.matched_keywords = matched
        hit.fused += lexical_weight / (rrf_k + rank)
    block_cosine: dict[int, float] = {}
    for entry_id, _ordinal, cosine in block_dense:
        block_cosine.setdefault(entry_id, cosine)
    for rank, entry_id in enumerate(_per_file([(e, o) for e, o, _c in block_dense]), start=1):
        hit = hit_of(entry_id)
        hit.dense_rank = min(hit.dense_rank or rank, rank)
        # The cosine a person is told about is the better of the file's and its block's.
        hit.cosine = max(hit.cosine or -1.0, block_cosine[entry_id])
        hit.fused += 1.0 / (rrf_k + rank)
    block_matched: dict[int, list[str]] = {}
    for entry_id, _ordinal, _score, matched in block_lexical:
        block_matched.setdefault(entry_id, matched)
    for rank, entry_id in enumerate(_per_file([(e, o) for e, o, _s, _m in block_lexical]), 1):
        hit = hit_of(entry_id)
        hit.lexical_rank = min(hit.lexical_rank or rank, rank)
        if not hit.matched_keywords:
            hit.matched_keywords = block_matched[entry_id]
        hit.fused += lexical_weight / (rrf_k + rank)
    for entry_id, ordinal in _best_blocks(
        block_dense, block_lexical, lexical_weight=lexical_weight, rrf_k=rrf_k
    ).items():
        hits[entry_id].block_ordinal = ordinal
    ordered = sorted(hits.values(), key=lambda h: (-h.fused, h.dense_rank or 10**6, h.entry_id))
    for n, hit in enumerate(ordered, start=1):
        hit.rank = n
    return ordered


def _passes(cosine: float, mean: float | None, rows: int, floor: float, margin: float) -> bool:
    # The relative test needs a distribution: with fewer than 5 rows there is none.
    use_relative = mean is not None and rows >= 5
    return cosine >= floor and (not use_relative or cosine - (mean or 0.0) >= margin)


def hybrid_search(
    *,
    user: User,
    character: Character,
    query_vector: list[float] | None,
    text: str,
    limit: int | None = None,
    channels: tuple[str, ...] = (CHANNEL_DENSE, CHANNEL_LEXICAL),
    lexical_weight: float | None = None,
    floor: Floor | None = None,
    blocks: bool = True,
) -> SearchOutcome:
    """Fused hits (at most ``limit``, default K) of the pair's active roots, best first.

    ``blocks=False`` searches the file rows alone (the figures before block rows, for the
    bench)."""
    started = time.perf_counter()
    k = limit or settings.FILES_RETRIEVAL_K
    text = (text or "")[: settings.FILES_QUERY_MAX_CHARS]
    floor = floor or active_floor()
    root_ids = active_root_ids(user=user, character=character)
    log: dict[str, Any] = {
        "roots": len(root_ids),
        "floor": round(floor.value, 4),
        "floor_source": floor.source,
        "relative_margin": round(floor.margin, 4),
    }
    candidates = max(k * 3, 10)
    dense: list[tuple[int, float]] = []
    block_dense: list[BlockHit] = []
    if CHANNEL_DENSE in channels and query_vector is not None and root_ids:
        raw, info = dense_channel(root_ids=root_ids, query_vector=query_vector, limit=candidates)
        log.update({"dense_plan": info["plan"], "pair_rows": info["pair_rows"]})
        mean = info["mean_cosine"]
        dense = [
            (eid, cos)
            for eid, cos in raw
            if _passes(cos, mean, info["pair_rows"], floor.value, floor.margin)
        ]
        log["dense_best"] = round(raw[0][1], 4) if raw else None
        log["dense_mean"] = round(mean, 4) if mean is not None else None
        log["dense_passed"] = len(dense)
        if blocks:
            braw, binfo = block_dense_channel(
                root_ids=root_ids, query_vector=query_vector, limit=candidates * 3
            )
            bmean = binfo["mean_cosine"]
            block_dense = [
                (eid, ordinal, cos)
                for eid, ordinal, cos in braw
                if _passes(cos, bmean, binfo["pair_rows"], floor.block_value, floor.block_margin)
            ]
            log.update(
                {
                    "block_floor": round(floor.block_value, 4),
                    "block_dense_plan": binfo["plan"],
                    "block_pair_rows": binfo["pair_rows"],
                    "block_dense_best": round(braw[0][2], 4) if braw else None,
                    "block_dense_passed": len(block_dense),
                }
            )
    german: list[str] = []
    simple: list[str] = []
    lexical: list[tuple[int, float, list[str], float | None]] = []
    block_lexical: list[tuple[int, int, float, list[str]]] = []
    if CHANNEL_LEXICAL in channels and text.strip() and root_ids:
        german, simple = query_terms(text)
        lexical = lexical_channel(
            root_ids=root_ids,
            german=german,
            simple=simple,
            query_vector=query_vector,
            limit=candidates,
            compound_parts=log.get("pair_rows", 0) <= settings.FILES_EXACT_SCAN_MAX_ROWS,
        )
        log["lexical_passed"] = len(lexical)
        if blocks:
            block_lexical = block_lexical_channel(
                root_ids=root_ids, german=german, simple=simple, limit=candidates * 3
            )
            log["block_lexical_passed"] = len(block_lexical)
    weight = settings.FILES_LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    hits = fuse(
        dense,
        lexical,
        lexical_weight=weight,
        rrf_k=settings.FILES_RRF_K,
        block_dense=block_dense,
        block_lexical=block_lexical,
    )[:k]
    if hits:
        rows = {
            eid: (rel, root)
            for eid, rel, root in IndexEntry.objects.filter(
                id__in=[h.entry_id for h in hits]
            ).values_list("id", "rel_path", "root_id")
        }
        for hit in hits:
            hit.rel_path, hit.root_id = rows[hit.entry_id]
    log["ms_db"] = round((time.perf_counter() - started) * 1000, 2)
    return SearchOutcome(hits=hits, log=log, query_lexemes=sorted(set(german) | set(simple)))
