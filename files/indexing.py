"""The one indexing path: parsed text of a file in, its index row and block rows out.

``index_entry_refresh`` / ``index_entries_refresh`` are what the watcher, the test corpus
(files/tests/corpus.py) and the benchmarks call, so every figure measured on an index is
measured on the product's own rows (on the product's own path). A file's learning step:

1. twin detection: a file whose content hash is already learned in the root (moved, copied,
   come back) takes over that enrichment and those embeddings — no model call;
2. otherwise the block map and the enrichment (model or offline extraction);
3. keywords: the enrichment's terms plus the words of every heading. DESIGN.md "Files":
   headings and block titles are keywords of their block (and of the file, so the lexical gate
   lets "Was weißt du über Seladon?" reach a note with the heading ``## Seladon``). Only heading
   words and a few extracted terms per block — never every word, so "nothing relevant" stays
   expressible;
4. embeddings in one batched call for all files of a batch (topic text + blocks that changed),
   each distinct text once: a block whose embedded text is already stored in the root (an
   unchanged section, a section repeated across files) keeps that vector, and identical texts
   within a batch share one. What the database holds is read per batch, not per file;
5. the upsert of the entries and their block rows (text, keywords, both search vectors) in one
   transaction per batch with a fixed number of statements, and a read-back of every row: an
   unverified write is a failure, never a success. When the batch cannot be written or
   verified it is written again file by file, so the failure is named on its file and the
   others are learned.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from django.contrib.postgres.search import SearchVector
from django.db import DatabaseError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from files.models import FileRoot, IndexBlock, IndexEntry
from files.watcher.enrich import block_terms, enrich, heading_terms
from files.watcher.structure import struktur_analysieren
from novaberg.embeddings import EmbeddingError, embed

SEARCH_TEXT_MAX = 200_000
BLOCK_TEXT_MAX = 50_000
# A block's embedding sees its first characters only (the model truncates anyway).
BLOCK_EMBED_CHARS = 1000
MAX_EMBEDDED_BLOCKS = 32
# Per block: its heading words plus this many of its own extracted terms.
BLOCK_OWN_TERMS = 5
# Per file: the enrichment's keywords plus at most this many heading words.
FILE_HEADING_TERMS = 32
ARCHIVE_SEGMENTS = {"archive", "archiv"}
# Rows per INSERT of one batch's write (a batch of files can hold thousands of blocks).
WRITE_BATCH_ROWS = 1000
WRITE_NOT_VERIFIED = "Die Indexzeile ließ sich nach dem Schreiben nicht bestätigen."
WRITE_FAILED = "Die Indexzeile ließ sich nicht speichern."

logger = logging.getLogger(__name__)


class RefreshStatus(StrEnum):
    NEW = "neu"
    CHANGED = "geaendert"
    FAILED = "fehler"


@dataclass(frozen=True)
class FileToIndex:
    """One file's parsed text and where it came from. ``digest`` is the sha256 of the file's
    bytes (the change key); the fingerprint fields feed the watcher's fast path and may be
    None where no file on disk stands behind the text."""

    root: FileRoot
    rel_path: str
    format: str
    digest: str
    text: str
    size: int
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    inode: int | None = None


@dataclass(frozen=True)
class RefreshResult:
    rel_path: str
    status: RefreshStatus
    entry_id: int | None = None
    # "llm" | "offline" | "extraktion_ersatz" | "wiedererkannt"
    source: str = ""
    notes: tuple[str, ...] = ()
    # Set when status is FAILED: a named step and a German sentence.
    step: str = ""
    message: str = ""


@dataclass(frozen=True)
class BlockRow:
    ordinal: int
    kind: str
    heading: str
    line_start: int
    line_end: int
    text: str
    block_hash: str
    keywords: list[str]
    embed: bool
    embed_text: str


@dataclass
class _Prepared:
    item: FileToIndex
    is_new: bool
    topic: str
    summary: str
    keywords: list[str]
    embed_keywords: list[str]
    block_map: list[dict[str, Any]]
    blocks: list[BlockRow]
    vector: list[float] | None
    block_vectors: dict[str, list[float]]
    source: str
    notes: list[str] = field(default_factory=list)
    # A copy of another file of the same batch: takes that file's vectors once they exist.
    copy_of: _Prepared | None = None


class _NotVerified(Exception):
    pass


def is_archived(rel_path: str) -> bool:
    parts = rel_path.split("/")[:-1]
    return any(p.lower() in ARCHIVE_SEGMENTS for p in parts)


def embedding_text(topic: str, summary: str, keywords: list[str]) -> str:
    """The text the file's topic embedding is computed from."""
    return " ".join(part for part in (topic, summary, ", ".join(keywords)) if part)


def _merge(*groups: Sequence[str], limit: int | None = None) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for group in groups:
        for word in group:
            key = word.lower()
            if word and key not in seen:
                seen.add(key)
                out.append(word[:100])
    return out[:limit] if limit is not None else out


def block_rows(text: str, block_map: list[dict[str, Any]]) -> list[BlockRow]:
    """One row per block of the block map: its parsed lines, a hash over what is embedded (so
    an unchanged block keeps its vector), its keywords (heading words first)."""
    lines = text.splitlines()
    rows: list[BlockRow] = []
    sections = 0
    for ordinal, block in enumerate(block_map):
        start, end = int(block["line_start"]), int(block["line_end"])
        body = "\n".join(lines[start - 1 : end])
        heading = str(block.get("heading") or "")
        embed_body = body[:BLOCK_EMBED_CHARS]
        embed_text = f"{heading}\n{embed_body}" if heading else embed_body
        is_section = block["kind"] == "section"
        embed_it = is_section and sections < MAX_EMBEDDED_BLOCKS and bool(embed_text.strip())
        if is_section:
            sections += 1
        rows.append(
            BlockRow(
                ordinal=ordinal,
                kind=str(block["kind"]),
                heading=heading,
                line_start=start,
                line_end=end,
                text=body[:BLOCK_TEXT_MAX],
                block_hash=hashlib.sha256(embed_text.encode("utf-8", "replace")).hexdigest(),
                keywords=_merge(heading_terms(heading), block_terms(body, BLOCK_OWN_TERMS)),
                embed=embed_it,
                embed_text=embed_text,
            )
        )
    return rows


def file_keywords(enriched: list[str], block_map: list[dict[str, Any]]) -> list[str]:
    """The file row's keywords: the enrichment's, then the words of its section headings."""
    heads = [
        word
        for b in block_map
        if b.get("kind") == "section" and b.get("heading")
        for word in heading_terms(str(b["heading"]))
    ]
    return _merge(enriched, _merge(heads, limit=FILE_HEADING_TERMS))


@dataclass
class _Known:
    """What the database already holds for the files of one batch, read in a few queries per
    root instead of several per file."""

    # (root id, rel_path) of every file that already has a row.
    existing: set[tuple[int, str]]
    # (root id, content hash) -> the first learned row with that hash (a twin candidate list).
    twins: dict[tuple[int, str], list[IndexEntry]]
    # (root id, block hash) -> a stored vector of a block with exactly that embedded text.
    block_vectors: dict[tuple[int, str], list[float]]


# What a twin hands over (not its search text, which can be 200,000 characters).
_TWIN_FIELDS = (
    "root_id",
    "rel_path",
    "inhalt_hash",
    "topic",
    "summary",
    "keywords",
    "block_map",
    "topic_embedding",
)


def _known(items: Sequence[FileToIndex]) -> _Known:
    existing: set[tuple[int, str]] = set()
    twins: dict[tuple[int, str], list[IndexEntry]] = {}
    by_root: dict[int, list[FileToIndex]] = {}
    for item in items:
        by_root.setdefault(item.root.pk, []).append(item)
    for root_id, group in by_root.items():
        paths = {i.rel_path for i in group}
        existing.update(
            (root_id, path)
            for path in IndexEntry.objects.filter(root_id=root_id, rel_path__in=paths).values_list(
                "rel_path", flat=True
            )
        )
        for twin in (
            IndexEntry.objects.filter(
                root_id=root_id,
                inhalt_hash__in={i.digest for i in group},
                indexed_at__isnull=False,
            )
            .only(*_TWIN_FIELDS)
            .order_by("pk")
        ):
            twins.setdefault((root_id, twin.inhalt_hash), []).append(twin)
    return _Known(existing=existing, twins=twins, block_vectors={})


def _stored_block_vectors(batch: list[_Prepared], known: _Known) -> None:
    """Blocks whose embedded text is already stored in the same root keep that vector: an
    edit re-embeds only its block, and a section repeated across files (a template, a
    signature) is embedded once per root. The key is the sha256 of the embedded text and the
    embedder's vector depends on the text alone (novaberg/embeddings.py), so the reused vector
    is the one a new call would compute."""
    wanted: dict[int, set[str]] = {}
    for p in batch:
        if p.copy_of is None:
            for b in p.blocks:
                if b.embed and b.block_hash not in p.block_vectors:
                    wanted.setdefault(p.item.root.pk, set()).add(b.block_hash)
    for root_id, hashes in wanted.items():
        rows = IndexBlock.objects.filter(
            entry__root_id=root_id, block_hash__in=hashes, embedding__isnull=False
        ).values_list("block_hash", "embedding")
        for block_hash, vector in rows:
            if vector is not None:
                known.block_vectors.setdefault((root_id, block_hash), list(vector))
    for p in batch:
        for b in p.blocks:
            stored = known.block_vectors.get((p.item.root.pk, b.block_hash))
            if b.embed and stored is not None:
                p.block_vectors.setdefault(b.block_hash, stored)


def _prepare(item: FileToIndex, twins: dict[str, _Prepared], known: _Known) -> _Prepared:
    is_new = (item.root.pk, item.rel_path) not in known.existing
    earlier = twins.get(item.digest)
    twin = next(
        (
            t
            for t in known.twins.get((item.root.pk, item.digest), [])
            if t.rel_path != item.rel_path
        ),
        None,
    )
    if earlier is not None:
        # A copy inside the same batch: the first one's enrichment, vectors filled in later.
        prepared = _Prepared(
            item=item,
            is_new=is_new,
            topic=earlier.topic,
            summary=earlier.summary,
            keywords=list(earlier.keywords),
            embed_keywords=list(earlier.embed_keywords),
            block_map=earlier.block_map,
            blocks=earlier.blocks,
            vector=None,
            block_vectors={},
            source="wiedererkannt",
            notes=["wiedererkannt"],
            copy_of=earlier,
        )
    elif twin is not None:
        # Moved or copied: same content, same enrichment; no model call, no embedding.
        prepared = _Prepared(
            item=item,
            is_new=is_new,
            topic=twin.topic,
            summary=twin.summary,
            keywords=list(twin.keywords),
            embed_keywords=list(twin.keywords),
            block_map=twin.block_map,
            blocks=block_rows(item.text, twin.block_map),
            vector=list(twin.topic_embedding) if twin.topic_embedding is not None else None,
            block_vectors={
                b.block_hash: list(b.embedding)
                for b in twin.blocks.all()
                if b.embedding is not None
            },
            source="wiedererkannt",
            notes=["wiedererkannt"],
        )
    else:
        block_map = struktur_analysieren(item.text, item.format)
        enrichment = enrich(item.text, item.rel_path, block_map)
        prepared = _Prepared(
            item=item,
            is_new=is_new,
            topic=enrichment.topic,
            summary=enrichment.summary,
            keywords=file_keywords(enrichment.keywords, block_map),
            embed_keywords=list(enrichment.keywords),
            block_map=block_map,
            blocks=block_rows(item.text, block_map),
            vector=None,
            block_vectors={},
            source=enrichment.source,
            notes=list(enrichment.notes),
        )
        twins.setdefault(item.digest, prepared)
    return prepared


def _embed_batch(batch: list[_Prepared]) -> int:
    """One embedding call for every missing vector of the batch (topics and blocks), each
    distinct text once: identical sections or topic texts across the files of a batch share
    one vector. Returns the number of texts embedded."""
    slots: dict[str, list[tuple[_Prepared, str | None]]] = {}  # text -> (file, block hash)
    for p in batch:
        if p.vector is None:
            text = embedding_text(p.topic, p.summary, p.embed_keywords)
            slots.setdefault(text, []).append((p, None))
        wanted: set[str] = set()
        for b in p.blocks:
            if b.embed and b.block_hash not in p.block_vectors and b.block_hash not in wanted:
                wanted.add(b.block_hash)
                slots.setdefault(b.embed_text, []).append((p, b.block_hash))
    if not slots:
        return 0
    texts = list(slots)
    vectors = embed(texts)
    for text, vector in zip(texts, vectors, strict=True):
        for p, block_hash in slots[text]:
            if block_hash is None:
                p.vector = vector
            else:
                p.block_vectors[block_hash] = vector
    return len(texts)


def _mtime(mtime_ns: int | None) -> datetime | None:
    return None if mtime_ns is None else datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)


def _entry_row(p: _Prepared, now: datetime) -> tuple[IndexEntry, list[str]]:
    """The file's index row as an unsaved object, and the fields an upsert sets."""
    item = p.item
    search_text = "\n".join([item.rel_path, p.topic, p.summary, " ".join(p.keywords), item.text])[
        :SEARCH_TEXT_MAX
    ]
    fields: dict[str, Any] = {
        "format": item.format,
        "size": item.size,
        "mtime": _mtime(item.mtime_ns),
        "mtime_ns": item.mtime_ns,
        "ctime_ns": item.ctime_ns,
        "inode": item.inode,
        "inhalt_hash": item.digest,
        "topic": p.topic,
        "summary": p.summary,
        "keywords": p.keywords,
        "line_count": len(item.text.splitlines()),
        "search_text": search_text,
        "topic_embedding": p.vector,
        "block_map": p.block_map,
        "archived": is_archived(item.rel_path),
        "state": IndexEntry.State.PRESENT,
        "last_seen_at": now,
        "indexed_at": now,
        "last_error": "",
    }
    return IndexEntry(root=item.root, rel_path=item.rel_path, **fields), list(fields)


def _block_objects(p: _Prepared, entry_id: int) -> list[IndexBlock]:
    return [
        IndexBlock(
            entry_id=entry_id,
            ordinal=b.ordinal,
            kind=b.kind,
            heading=b.heading,
            line_start=b.line_start,
            line_end=b.line_end,
            block_hash=b.block_hash,
            embedding=p.block_vectors.get(b.block_hash) if b.embed else None,
            text=b.text,
            keywords=b.keywords,
        )
        for b in p.blocks
    ]


@transaction.atomic
def _write(batch: Sequence[_Prepared]) -> list[int]:
    """Upsert the entries of ``batch`` and replace their block rows, in one transaction and a
    fixed number of statements whatever the batch's size; then read every row back. Returns
    the entry ids in order; raises ``_NotVerified`` (the transaction rolls back) when a row
    does not read back as written."""
    now = timezone.now()
    rows = [_entry_row(p, now) for p in batch]
    entries = [entry for entry, _ in rows]
    # One INSERT … ON CONFLICT (root, rel_path) DO UPDATE instead of update_or_create's
    # SELECT … FOR UPDATE + UPDATE/INSERT; fields not named (first_seen_at, the learned hash)
    # keep their stored value, as with update_or_create's defaults.
    IndexEntry.objects.bulk_create(
        entries,
        update_conflicts=True,
        unique_fields=["root", "rel_path"],
        update_fields=rows[0][1],
        batch_size=WRITE_BATCH_ROWS,
    )
    ids = [entry.pk for entry in entries]
    if any(pk is None for pk in ids):
        raise _NotVerified
    # Both search vectors from the stored search text (the text just written), one statement.
    IndexEntry.objects.filter(pk__in=ids).update(
        search_vector=SearchVector("search_text", config="german"),
        search_vector_simple=SearchVector("search_text", config="simple"),
    )
    IndexBlock.objects.filter(entry_id__in=ids).delete()
    IndexBlock.objects.bulk_create(
        [block for p, pk in zip(batch, ids, strict=True) for block in _block_objects(p, pk)],
        batch_size=WRITE_BATCH_ROWS,
    )
    # The block's search vectors from its stored text (heading line included), one statement.
    IndexBlock.objects.filter(entry_id__in=ids).update(
        search_vector=SearchVector("text", config="german"),
        search_vector_simple=SearchVector("text", config="simple"),
    )
    # Read back (one query): an unverified write is a failure, never a success.
    stored = {
        pk: (digest, verified)
        for pk, digest, verified in IndexEntry.objects.filter(pk__in=ids)
        .annotate(verified_blocks=Count("blocks", filter=Q(blocks__search_vector__isnull=False)))
        .values_list("pk", "inhalt_hash", "verified_blocks")
    }
    for p, pk in zip(batch, ids, strict=True):
        if stored.get(pk) != (p.item.digest, len(p.blocks)):
            raise _NotVerified
    return [int(pk) for pk in ids]


def _write_each(batch: Sequence[_Prepared]) -> list[int | RefreshResult]:
    """Write ``batch`` in one transaction; when that fails, file by file, so a file that
    cannot be written or verified fails with its name and the others are still learned.
    Returns, per file in order, its entry id or its failure."""
    keys = {(p.item.root.pk, p.item.rel_path) for p in batch}
    if len(batch) > 1 and len(keys) == len(batch):  # one upsert cannot touch a row twice
        try:
            return list(_write(batch))
        except (_NotVerified, DatabaseError):
            logger.warning(
                "indexing: the batch write of %d files failed; writing them one by one",
                len(batch),
                extra={"outcome": "stapel_einzeln"},
            )
    out: list[int | RefreshResult] = []
    for p in batch:
        try:
            out.append(_write([p])[0])
            continue
        except _NotVerified:
            step, message = "nicht_verifiziert", WRITE_NOT_VERIFIED
        except DatabaseError as exc:
            logger.warning(
                "indexing: %s not written: %s", p.item.rel_path, exc, extra={"outcome": "schreiben"}
            )
            step, message = "schreiben", WRITE_FAILED
        out.append(RefreshResult(p.item.rel_path, RefreshStatus.FAILED, step=step, message=message))
    return out


def index_entries_refresh(
    *,
    items: Sequence[FileToIndex],
    on_result: Callable[[RefreshResult], None] | None = None,
) -> list[RefreshResult]:
    """Learn ``items`` (new or changed files of one or more roots), one result per item in
    order. Embeddings are computed in one batched call; the batch is written and verified in
    one transaction (file by file where that fails), so a kill leaves only whole files
    behind. ``on_result`` is called with each file's result once its write is committed."""
    twins: dict[str, _Prepared] = {}
    known = _known(items)
    batch = [_prepare(item, twins, known) for item in items]
    try:
        _stored_block_vectors(batch, known)
        _embed_batch([p for p in batch if p.copy_of is None])
    except EmbeddingError as exc:
        failed = [
            RefreshResult(
                p.item.rel_path,
                RefreshStatus.FAILED,
                step=f"einbettung_{exc.step}",
                message=f"Die Einbettung ließ sich nicht berechnen: {exc.message or exc.step}",
            )
            for p in batch
        ]
        for result in failed:
            if on_result is not None:
                on_result(result)
        return failed
    for p in batch:
        if p.copy_of is not None:
            p.vector, p.block_vectors = p.copy_of.vector, p.copy_of.block_vectors
    results: list[RefreshResult] = []
    for p, written in zip(batch, _write_each(batch), strict=True):
        if isinstance(written, RefreshResult):
            result = written
        else:
            result = RefreshResult(
                p.item.rel_path,
                RefreshStatus.NEW if p.is_new else RefreshStatus.CHANGED,
                entry_id=written,
                source=p.source,
                notes=tuple(p.notes),
            )
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


def index_entry_refresh(*, item: FileToIndex) -> RefreshResult:
    """Learn one file (see ``index_entries_refresh``)."""
    return index_entries_refresh(items=[item])[0]
