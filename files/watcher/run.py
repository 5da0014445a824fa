"""One watcher run over one root (seed 004 §5, v0.12; DESIGN.md "Files").

Rules this module carries:
- Read-only: files are opened only through ``scan.open_readonly``; nothing is written under
  the root.
- Change detection by content: sha256, streamed. Beyond the seed, a fast path skips the read
  when (size, mtime_ns, ctime_ns, inode) are unchanged: a tool can set mtime back but not
  ctime, so a same-size-same-mtime rewrite still changes the key. A periodic full-hash run
  (``FILES_FULL_HASH_EVERY_S``) hashes every file regardless.
- Only new or changed files are enriched; a file whose hash is already known in the root (a
  file that came back, or moved) takes over that enrichment.
- Each file commits on its own, so a run killed at any point leaves only whole files behind; a
  rerun continues and ends with the same index as one clean run. Gone files are marked ``fort``
  at the end of a completed run only, never deleted.
- One run per root at a time: a PostgreSQL session advisory lock, released by the server when
  the worker dies (SIGKILL included), so a killed run never blocks the next one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.db import connection, transaction
from django.db.models import Value
from django.utils import timezone

from files.models import FileRoot, IndexBlock, IndexEntry
from files.watcher import scan
from files.watcher.enrich import enrich
from files.watcher.parsers import ParseError, parser_for_format
from files.watcher.structure import struktur_analysieren
from novaberg.embeddings import EmbeddingError, embed

logger = logging.getLogger(__name__)

# pg_advisory_lock(classid, objid): classid names the file service ("NB" + 4), objid the root.
LOCK_CLASS = 0x4E4204
CHUNK = 1 << 20
SEARCH_TEXT_MAX = 200_000
MAX_EMBEDDED_BLOCKS = 32
PROGRESS_EVERY_S = 0.5
ARCHIVE_SEGMENTS = {"archive", "archiv"}

ProgressFn = Callable[[int, int], None]


@dataclass
class RunReport:
    root_id: int
    outcome: str  # "fertig" | "laeuft_schon" | "nicht_aktiv" | "verzeichnis_fehlt"
    full_hash: bool = False
    counts: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "root_id": self.root_id,
            "outcome": self.outcome,
            "full_hash": self.full_hash,
            "counts": self.counts,
        }


def empty_counts() -> dict[str, Any]:
    return {
        "new": 0,
        "changed": 0,
        "unchanged": 0,
        "gone": 0,
        "skipped": {},
        "errors": 0,
        "error_steps": {},
        "notes": {},
    }


@contextmanager
def root_lock(root_id: int) -> Iterator[bool]:
    """Try the per-root lock; yields False when another run holds it (no waiting)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, root_id])
        got = bool(cur.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, root_id])


def is_archived(rel_path: str) -> bool:
    parts = rel_path.split("/")[:-1]
    return any(p.lower() in ARCHIVE_SEGMENTS for p in parts)


def _read_and_hash(found: scan.Found, max_bytes: int) -> tuple[str, bytes]:
    """sha256 streamed in 1 MiB chunks; the bytes are kept for parsing (size-limited)."""
    digest = hashlib.sha256()
    chunks: list[bytes] = []
    total = 0
    fd = scan.open_readonly(found.path)
    try:
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise _TooLarge
            digest.update(chunk)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return digest.hexdigest(), b"".join(chunks)


class _TooLarge(Exception):
    pass


def _embedding_text(topic: str, summary: str, keywords: list[str]) -> str:
    return " ".join(part for part in (topic, summary, ", ".join(keywords)) if part)


def _block_text(lines: list[str], block: dict[str, Any]) -> str:
    body = "\n".join(lines[block["line_start"] - 1 : block["line_end"]])
    return body[:1000]


class _Run:
    def __init__(self, root: FileRoot, *, full_hash: bool, on_progress: ProgressFn | None) -> None:
        self.root = root
        self.root_path = Path(root.path)
        self.full_hash = full_hash
        self.on_progress = on_progress
        self.counts = empty_counts()
        self.skipped: Counter[str] = Counter()
        self.error_steps: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.present: set[str] = set()
        self.touched_unchanged: list[str] = []
        self.max_bytes = settings.FILES_MAX_BYTES
        self.delay = settings.FILES_TEST_DELAY_PER_FILE_S
        self._last_progress = 0.0

    # -- progress --------------------------------------------------------------------------

    def progress(self, done: int, total: int, *, running: bool, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            FileRoot.objects.filter(pk=self.root.pk).update(
                progress={"done": done, "total": total, "running": running}
            )
        if self.on_progress is not None:
            self.on_progress(done, total)

    def error(self, step: str, rel_path: str, message: str) -> None:
        self.error_steps[step] += 1
        logger.warning("watcher: %s %s: %s", step, rel_path, message, extra={"outcome": step})
        # The error is shown on the row when the file has one (rows are kept).
        IndexEntry.objects.filter(root=self.root, rel_path=rel_path).update(
            last_error=f"{step}: {message}"[:500]
        )

    # -- the run ---------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        items = list(
            scan.walk(
                self.root_path,
                include=self.root.include_globs,
                exclude=self.root.exclude_globs,
                max_bytes=self.max_bytes,
            )
        )
        found = [i for i in items if isinstance(i, scan.Found)]
        for item in items:
            if isinstance(item, scan.Skip):
                self.skipped[item.reason] += 1
        existing: dict[str, tuple[Any, ...]] = {
            row[0]: row[1:]
            for row in IndexEntry.objects.filter(root=self.root).values_list(
                "rel_path", "id", "size", "mtime_ns", "ctime_ns", "inode", "inhalt_hash", "state"
            )
        }
        total = len(found)
        self.progress(0, total, running=True, force=True)
        for done, item in enumerate(found, start=1):
            try:
                self.one_file(item, existing.get(item.rel_path))
            except Exception as exc:  # one bad file must not end the run (issue: "go on")
                logger.exception("watcher: unexpected failure on %s", item.rel_path)
                self.present.add(item.rel_path)
                self.error("unerwartet", item.rel_path, f"{type(exc).__name__}: {exc}")
            if self.delay:
                time.sleep(self.delay)
            self.progress(done, total, running=True)
        self.finish(existing)
        self.progress(total, total, running=False, force=True)
        return self.counts

    def one_file(self, item: scan.Found, row: tuple[Any, ...] | None) -> None:
        key = (item.size, item.mtime_ns, item.ctime_ns, item.inode)
        if (
            row is not None
            and not self.full_hash
            and row[5]
            and row[6] == IndexEntry.State.PRESENT
            and tuple(row[1:5]) == key
        ):
            self.present.add(item.rel_path)
            self.touched_unchanged.append(item.rel_path)
            self.counts["unchanged"] += 1
            return
        try:
            digest, data = _read_and_hash(item, self.max_bytes)
        except _TooLarge:
            self.skipped[scan.TOO_LARGE] += 1
            return
        except FileNotFoundError:
            # Deleted between the walk and the read: it is gone, marked at the end.
            self.skipped[scan.VANISHED] += 1
            return
        except PermissionError as exc:
            self.present.add(item.rel_path)
            self.error("nicht_lesbar", item.rel_path, str(exc))
            return
        except OSError as exc:
            self.present.add(item.rel_path)
            self.error("lesefehler", item.rel_path, str(exc))
            return
        if row is not None and row[5] == digest:
            self.unchanged_by_hash(item, row)
            return
        parser = parser_for_format(item.format)
        assert parser is not None  # walk only yields files with a parser
        try:
            parsed = parser.parse(data)
        except ParseError as exc:
            if exc.step == "binaer":
                self.skipped[scan.BINARY] += 1
                return
            self.present.add(item.rel_path)
            self.error(exc.step, item.rel_path, exc.message)
            return
        for note in parsed.notes:
            self.notes[note] += 1
        self.learn(item, digest, parsed.text, is_new=row is None)
        self.present.add(item.rel_path)

    def unchanged_by_hash(self, item: scan.Found, row: tuple[Any, ...]) -> None:
        """Same content. A file that was ``fort`` and came back is recognised by its hash."""
        came_back = row[6] == IndexEntry.State.GONE
        key = (item.size, item.mtime_ns, item.ctime_ns, item.inode)
        if not came_back and tuple(row[1:5]) == key:
            # Verified by hash and nothing to record: last_seen_at is set in bulk at the end.
            self.present.add(item.rel_path)
            self.touched_unchanged.append(item.rel_path)
            self.counts["unchanged"] += 1
            return
        with transaction.atomic():
            IndexEntry.objects.filter(pk=row[0]).update(
                size=item.size,
                mtime=_mtime(item),
                mtime_ns=item.mtime_ns,
                ctime_ns=item.ctime_ns,
                inode=item.inode,
                state=IndexEntry.State.PRESENT,
                last_seen_at=timezone.now(),
                last_error="",
            )
        if came_back:
            self.notes["wieder_da"] += 1
        self.present.add(item.rel_path)
        self.counts["unchanged"] += 1

    def learn(self, item: scan.Found, digest: str, text: str, *, is_new: bool) -> None:
        now = timezone.now()
        lines = text.splitlines()
        twin = (
            IndexEntry.objects.filter(root=self.root, inhalt_hash=digest, indexed_at__isnull=False)
            .exclude(rel_path=item.rel_path)
            .first()
        )
        block_vectors: dict[str, list[float]] = {}
        if twin is not None:
            # Moved or copied: same content, same enrichment; no model call, no embedding.
            topic, summary, keywords = twin.topic, twin.summary, list(twin.keywords)
            block_map = twin.block_map
            vector = twin.topic_embedding
            block_vectors = {
                b.block_hash: b.embedding for b in twin.blocks.all() if b.embedding is not None
            }
            self.notes["wiedererkannt"] += 1
            source = "wiedererkannt"
        else:
            block_map = struktur_analysieren(text, item.format)
            enrichment = enrich(text, item.rel_path, block_map)
            for note in enrichment.notes:
                self.notes[note] += 1
            topic, summary, keywords = enrichment.topic, enrichment.summary, enrichment.keywords
            source = enrichment.source
            vector = None
        blocks = self.block_rows(lines, block_map)
        if twin is None or any(b["hash"] not in block_vectors for b in blocks if b["embed"]):
            old = {
                b.block_hash: b.embedding
                for b in IndexBlock.objects.filter(
                    entry__root=self.root, entry__rel_path=item.rel_path
                )
                if b.embedding is not None
            }
            block_vectors.update({k: v for k, v in old.items() if k not in block_vectors})
            wanted = [b for b in blocks if b["embed"] and b["hash"] not in block_vectors]
            texts = ([_embedding_text(topic, summary, keywords)] if vector is None else []) + [
                b["text"] for b in wanted
            ]
            try:
                vectors = embed(texts)  # one batched call per file
            except EmbeddingError as exc:
                self.present.add(item.rel_path)
                self.error(f"einbettung_{exc.step}", item.rel_path, exc.message)
                return
            if vector is None:
                vector, vectors = vectors[0], vectors[1:]
            for b, vec in zip(wanted, vectors, strict=True):
                block_vectors[b["hash"]] = vec
        search_text = "\n".join([item.rel_path, topic, summary, " ".join(keywords), text])[
            :SEARCH_TEXT_MAX
        ]
        with transaction.atomic():
            entry, _ = IndexEntry.objects.update_or_create(
                root=self.root,
                rel_path=item.rel_path,
                defaults={
                    "format": item.format,
                    "size": item.size,
                    "mtime": _mtime(item),
                    "mtime_ns": item.mtime_ns,
                    "ctime_ns": item.ctime_ns,
                    "inode": item.inode,
                    "inhalt_hash": digest,
                    "topic": topic,
                    "summary": summary,
                    "keywords": keywords,
                    "line_count": len(lines),
                    "search_text": search_text,
                    "topic_embedding": vector,
                    "block_map": block_map,
                    "archived": is_archived(item.rel_path),
                    "state": IndexEntry.State.PRESENT,
                    "last_seen_at": now,
                    "indexed_at": now,
                    "last_error": "",
                },
            )
            IndexEntry.objects.filter(pk=entry.pk).update(
                search_vector=SearchVector(Value(search_text), config="german"),
                search_vector_simple=SearchVector(Value(search_text), config="simple"),
            )
            IndexBlock.objects.filter(entry=entry).delete()
            IndexBlock.objects.bulk_create(
                [
                    IndexBlock(
                        entry=entry,
                        ordinal=i,
                        kind=b["kind"],
                        heading=b["heading"],
                        line_start=b["line_start"],
                        line_end=b["line_end"],
                        block_hash=b["hash"],
                        embedding=block_vectors.get(b["hash"]) if b["embed"] else None,
                    )
                    for i, b in enumerate(blocks)
                ]
            )
            # Read back: an unverified write is a failure, never a success.
            stored = (
                IndexEntry.objects.filter(pk=entry.pk).values_list("inhalt_hash", flat=True).first()
            )
            if stored != digest:
                raise RuntimeError("index row did not read back")
        self.counts["new" if is_new else "changed"] += 1
        self.notes[f"quelle_{source}"] += 1

    def block_rows(self, lines: list[str], block_map: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        sections = 0
        for block in block_map:
            text = _block_text(lines, block)
            embed_it = block["kind"] == "section" and sections < MAX_EMBEDDED_BLOCKS
            if block["kind"] == "section":
                sections += 1
            body = f"{block['heading']}\n{text}" if block["heading"] else text
            rows.append(
                {
                    **block,
                    "hash": hashlib.sha256(body.encode("utf-8", "replace")).hexdigest(),
                    "text": body,
                    "embed": embed_it and bool(body.strip()),
                }
            )
        return rows

    def finish(self, existing: dict[str, tuple[Any, ...]]) -> None:
        now = timezone.now()
        gone = [
            path
            for path, row in existing.items()
            if path not in self.present and row[6] == IndexEntry.State.PRESENT
        ]
        for start in range(0, len(gone), 2000):
            batch = gone[start : start + 2000]
            IndexEntry.objects.filter(root=self.root, rel_path__in=batch).update(
                state=IndexEntry.State.GONE
            )
        for start in range(0, len(self.touched_unchanged), 5000):
            IndexEntry.objects.filter(
                root=self.root, rel_path__in=self.touched_unchanged[start : start + 5000]
            ).update(last_seen_at=now)
        self.counts["gone"] = len(gone)
        self.counts["skipped"] = dict(sorted(self.skipped.items()))
        self.counts["error_steps"] = dict(sorted(self.error_steps.items()))
        self.counts["errors"] = sum(self.error_steps.values())
        self.counts["notes"] = dict(sorted(self.notes.items()))


def _mtime(item: scan.Found) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(item.mtime_ns / 1e9, tz=UTC)


def wants_full_hash(root: FileRoot) -> bool:
    if not settings.FILES_FAST_PATH or root.last_full_hash_at is None:
        return True
    every = settings.FILES_FULL_HASH_EVERY_S
    return every == 0 or timezone.now() - root.last_full_hash_at >= timedelta(seconds=every)


def index_root_run(
    *, root_id: int, full_hash: bool | None = None, on_progress: ProgressFn | None = None
) -> RunReport:
    """Walk one active root and bring its index up to date. Idempotent; safe to kill."""
    with root_lock(root_id) as got:
        if not got:
            return RunReport(root_id, "laeuft_schon")
        root = FileRoot.objects.filter(pk=root_id).first()
        if root is None or root.state != FileRoot.State.ACTIVE:
            return RunReport(root_id, "nicht_aktiv")
        full = wants_full_hash(root) if full_hash is None else full_hash
        started = timezone.now()
        FileRoot.objects.filter(pk=root.pk).update(last_run_started_at=started)
        run = _Run(root, full_hash=full, on_progress=on_progress)
        try:
            counts = run.execute()
        except scan.RootMissing:
            counts = empty_counts()
            counts["root_missing"] = True
            FileRoot.objects.filter(pk=root.pk).update(
                last_error=f"Das Verzeichnis {root.path} ist nicht mehr da oder nicht lesbar; "
                "die Indexzeilen bleiben erhalten.",
                last_counts=counts,
                last_run_finished_at=timezone.now(),
                progress={"done": 0, "total": 0, "running": False},
            )
            return RunReport(root_id, "verzeichnis_fehlt", full, counts)
        counts["full_hash"] = full
        updates: dict[str, Any] = {
            "last_counts": counts,
            "last_run_finished_at": timezone.now(),
            "last_error": "",
        }
        if full:
            updates["last_full_hash_at"] = started
        FileRoot.objects.filter(pk=root.pk).update(**updates)
        return RunReport(root_id, "fertig", full, counts)
