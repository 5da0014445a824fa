"""One watcher run over one root (seed 004 §5, v0.12; DESIGN.md "Files").

Rules this module carries:
- Read-only: files are opened only through ``scan.open_readonly``; nothing is written under
  the root.
- Nothing is reached by path: the root is opened once (``boundary.root_open``: no link on any
  component, the device and inode stored at release), the walk lists and lstats relative to
  it, and each file is read relative to its directory's descriptor, so a folder swapped for a
  link during the run makes a file unreadable, never stored with outside content. The row's
  fast-path key is the fstat of the descriptor the content was read from (issue 27).
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
- Every run has its ``IndexRun`` row (files/watcher/runs.py): progress, counts and times are
  published with the root's copy in one transaction; the heartbeat lets beat requeue a run
  whose worker died. Learning a file is the indexing service's job (files/indexing.py).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from files import fsaccess
from files.boundary import RootPathCheck, root_open
from files.indexing import FileToIndex, RefreshResult, RefreshStatus, index_entries_refresh
from files.models import FileRoot, IndexEntry, IndexRun
from files.watcher import scan
from files.watcher.hooks import AFTER_FILE, AFTER_WRITE, hook
from files.watcher.parsers import PARSERS, ParseError, parser_for_format
from files.watcher.runs import LOCK_CLASS, run_claim, run_publish, run_skip

logger = logging.getLogger(__name__)

CHUNK = 1 << 20
PROGRESS_EVERY_S = 0.5
# A row's last_seen_at is refreshed when it is older than this: a rescan of unchanged files
# writes no row at all (the run's own finished_at is the exact time of the last sighting).
LAST_SEEN_GRANULARITY = timedelta(hours=1)
_KNOWN_COLUMNS = "rel_path, id, size, mtime_ns, ctime_ns, inode, inhalt_hash, state"
# Every stored row of a root (a full-hash run compares every file by its hash).
KNOWN_SQL = f"SELECT {_KNOWN_COLUMNS} FROM files_indexentry WHERE root_id = %s"
# A rescan's fast path: the key of every present row as the 5-tuple ``scan.FastPath`` keeps
# by path and compares — one query, no ORM object, nothing else per row. A row that may not
# skip the read (never hashed, a format the walk no longer reads, over the size limit) gets
# no size, so no file matches it: it is read like a new file, or found gone.
FAST_KEYS_SQL = (
    "SELECT rel_path, CASE WHEN inhalt_hash <> '' AND format = ANY(%s) AND size <= %s "
    "THEN size END, mtime_ns, ctime_ns, inode FROM files_indexentry "
    "WHERE root_id = %s AND state = %s"
)
# Whether any present row of the root was last seen before a time (``finish`` refreshes them).
STALE_SQL = (
    "SELECT EXISTS (SELECT 1 FROM files_indexentry "
    "WHERE root_id = %s AND state = %s AND last_seen_at < %s)"
)
# The whole rows of the files the walk yielded (new, changed, or back after being gone).
ROWS_BY_PATH_SQL = (
    f"SELECT {_KNOWN_COLUMNS} FROM files_indexentry WHERE root_id = %s AND rel_path = ANY(%s)"
)
ROWS_BY_PATH_BATCH = 5000

ProgressFn = Callable[[int, int], None]


@dataclass
class RunReport:
    root_id: int
    # "fertig" | "laeuft_schon" | "nicht_aktiv" | "verzeichnis_fehlt" | "ersetzt" | a fence step
    outcome: str
    full_hash: bool = False
    counts: dict[str, Any] = field(default_factory=dict)
    run_id: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "root_id": self.root_id,
            "run_id": self.run_id,
            "outcome": self.outcome,
            "full_hash": self.full_hash,
            "counts": self.counts,
        }


class Known(NamedTuple):
    """What the index knows of a file from the last run (the fast-path key and the hash)."""

    id: int
    size: int
    mtime_ns: int | None
    ctime_ns: int | None
    inode: int | None
    inhalt_hash: str
    state: str

    def same_key(self, item: scan.Found) -> bool:
        return (self.size, self.mtime_ns, self.ctime_ns, self.inode) == (
            item.size,
            item.mtime_ns,
            item.ctime_ns,
            item.inode,
        )


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
        row = cur.fetchone()
        got = bool(row and row[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, root_id])


def _read_and_hash(
    found: scan.Found, max_bytes: int, dirs: fsaccess.DirCache
) -> tuple[str, bytes, scan.Found]:
    """sha256 of the whole file; the bytes are kept for parsing (size-limited), with ``found``
    carrying the fast-path key of the descriptor the bytes came from (fstat right after the
    open, relative to the root's descriptor: the key and the content are the same file's).

    The first read asks for the size the walk saw plus one byte, so a file that did not grow
    is read in one call and its EOF in a second; a file that grew is read on in 1 MiB chunks
    (never a 1 MiB buffer for a 4 KiB file)."""
    parent, _, name = found.rel_path.rpartition("/")
    fd = scan.open_readonly(dirs.directory(parent), name)
    try:
        st = os.fstat(fd)
        first = os.read(fd, min(found.size, max_bytes) + 1)
        chunks = [first]
        total = len(first)
        while first:
            if total > max_bytes:
                raise _TooLarge
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            total += len(chunk)
            chunks.append(chunk)
        if total > max_bytes:
            raise _TooLarge
    finally:
        os.close(fd)
    data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
    if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) != found[2:6]:
        found = found._replace(
            size=st.st_size, mtime_ns=st.st_mtime_ns, ctime_ns=st.st_ctime_ns, inode=st.st_ino
        )
    return hashlib.sha256(data).hexdigest(), data, found


class _TooLarge(Exception):
    pass


def _mtime(item: scan.Found) -> datetime:
    return datetime.fromtimestamp(item.mtime_ns / 1e9, tz=UTC)


class _Run:
    def __init__(
        self,
        root: FileRoot,
        run: IndexRun,
        *,
        full_hash: bool,
        on_progress: ProgressFn | None,
        root_fd: int,
    ) -> None:
        self.root = root
        self.run = run
        self.root_path = Path(root.path)
        # The root's checked descriptor: the walk and every read go through it.
        self.root_fd = root_fd
        self.dirs = fsaccess.DirCache(root_fd)
        self.full_hash = full_hash
        self.on_progress = on_progress
        self.counts = empty_counts()
        self.skipped: Counter[str] = Counter()
        self.skipped_files: list[dict[str, str]] = []
        self.error_steps: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.present: set[str] = set()
        self.pending: list[FileToIndex] = []
        self.max_bytes: int = settings.FILES_MAX_BYTES
        self.fast: scan.FastPath | None = None
        # Rows whose last sighting is older than this are refreshed by ``finish``; a rescan
        # asks beside its walk whether there are any (STALE_SQL) and skips the update if not.
        self.stale_before = timezone.now() - LAST_SEEN_GRANULARITY
        self.stale_rows = True
        # The claim published the run's start just now: the next publish is due by the clock.
        self._last_progress = time.monotonic()

    # -- progress --------------------------------------------------------------------------

    def counts_now(self) -> dict[str, Any]:
        """The counts so far, in the published shape (progress and counts go out together)."""
        counts = dict(self.counts)
        counts["skipped"] = dict(sorted(self.skipped.items()))
        counts["skipped_files"] = list(self.skipped_files)
        counts["error_steps"] = dict(sorted(self.error_steps.items()))
        counts["errors"] = sum(self.error_steps.values())
        counts["notes"] = dict(sorted(self.notes.items()))
        counts["full_hash"] = self.full_hash
        return counts

    def progress(self, done: int, total: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last_progress >= PROGRESS_EVERY_S:
            self._last_progress = now
            run_publish(
                run=self.run,
                state=IndexRun.State.RUNNING,
                done=done,
                total=total,
                counts=self.counts_now(),
            )
        if self.on_progress is not None:
            self.on_progress(done, total)

    def skip(self, rel_path: str, reason: str) -> None:
        self.skipped[reason] += 1
        if len(self.skipped_files) < scan.SKIPPED_LISTED:
            self.skipped_files.append({"path": rel_path, "reason": reason})

    def error(self, step: str, rel_path: str, message: str) -> None:
        self.error_steps[step] += 1
        logger.warning("watcher: %s %s: %s", step, rel_path, message, extra={"outcome": step})
        # The error is shown on the row when the file has one (rows are kept).
        IndexEntry.objects.filter(root=self.root, rel_path=rel_path).update(
            last_error=f"{step}: {message}"[:500]
        )

    # -- the run ---------------------------------------------------------------------------

    def _rows(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        with connection.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchall()

    def _walk_beside_the_keys(self, walk_args: dict[str, Any]) -> list[scan.Found | scan.Skip]:
        """A rescan's walk with the fast path. The stored keys (FAST_KEYS_SQL) and whether any
        row's last sighting is stale (STALE_SQL) are asked for in one pipeline before the
        walk: the database reads the rows while the walk lists and lstats the tree, and the
        keys are fetched when the walk needs them (``scan.FastPath``)."""
        connection.ensure_connection()
        raw = connection.connection
        params = [
            sorted({p.format for p in PARSERS}),
            self.max_bytes,
            self.root.pk,
            IndexEntry.State.PRESENT,
        ]
        with raw.pipeline():
            keys = psycopg.Cursor(raw)
            keys.execute(FAST_KEYS_SQL, params, binary=True)
            stale = psycopg.Cursor(raw)
            stale.execute(STALE_SQL, [self.root.pk, IndexEntry.State.PRESENT, self.stale_before])
            # PQconsumeInput between directories: the rows move into libpq's buffer as they
            # arrive, so the server never waits on a full socket while the walk runs.
            self.fast = scan.FastPath(keys.fetchall, poll=raw.pgconn.consume_input)
            items = list(
                scan.walk(self.root_path, fast=self.fast, dir_fd=self.root_fd, **walk_args)
            )
            self.fast.ready()  # fetched within the pipeline (the walk may have had no entry)
            row = stale.fetchone()
            self.stale_rows = bool(row and row[0])
        return items

    def execute(self) -> tuple[int, dict[str, Any]]:
        pk = self.root.pk
        # The stored state of the root as plain tuples, never an ORM object. A rescan loads the
        # key of every present row (one query); the walk settles every file whose key still
        # matches in place (scan.FastPath) and yields only the rest, whose rows come after.
        fast: scan.FastPath | None = None
        existing: dict[str, tuple[Any, ...]] = {}
        walk_args: dict[str, Any] = {
            "include": self.root.include_globs,
            "exclude": self.root.exclude_globs,
            "max_bytes": self.max_bytes,
        }
        if self.full_hash:
            existing = {row[0]: row for row in self._rows(KNOWN_SQL, [pk])}
            items = list(scan.walk(self.root_path, dir_fd=self.root_fd, **walk_args))
        else:
            items = self._walk_beside_the_keys(walk_args)
            fast = self.fast
        found = [i for i in items if isinstance(i, scan.Found)]
        for item in items:
            if isinstance(item, scan.Skip):
                self.skip(item.rel_path, item.reason)
        settled = 0
        unsettled: set[str] = set()
        if fast is not None:
            settled = fast.settled
            # Present rows the walk did not settle: changed (read below) or gone (``finish``).
            unsettled = fast.unsettled()
            # The rows of the files to read: changed, or back after being gone (a new one has none).
            paths = [i.rel_path for i in found]
            for start in range(0, len(paths), ROWS_BY_PATH_BATCH):
                batch = paths[start : start + ROWS_BY_PATH_BATCH]
                for stored in self._rows(ROWS_BY_PATH_SQL, [pk, batch]):
                    existing[stored[0]] = stored
        total = settled + len(found)
        self.counts["unchanged"] += settled
        # Files to read: the total and this run's counts go out before the first is read. A
        # rescan that settled everything publishes only its end (due by the clock otherwise).
        self.progress(settled, total, force=bool(found))
        if settled and settings.FILES_TEST_HOOK:
            for _ in range(settled):
                hook(AFTER_FILE)
        for done, item in enumerate(found, start=settled + 1):
            rel_path = item.rel_path
            row = existing.get(rel_path)
            try:
                self.one_file(item, Known(*row[1:]) if row is not None else None)
            except Exception as exc:  # one bad file must not end the run
                logger.exception("watcher: unexpected failure on %s", rel_path)
                self.present.add(rel_path)
                self.error("unerwartet", rel_path, f"{type(exc).__name__}: {exc}")
            if len(self.pending) >= settings.FILES_LEARN_BATCH_FILES:
                self.learn_pending()
            hook(AFTER_FILE)
            self.progress(done - len(self.pending), total)
        self.learn_pending()
        self.finish(existing, unsettled)
        return total, self.counts_now()

    def one_file(self, item: scan.Found, known: Known | None) -> None:
        """A file the fast path did not settle: read, hash, and learn it if it changed."""
        try:
            digest, data, item = _read_and_hash(item, self.max_bytes, self.dirs)
        except _TooLarge:
            self.skip(item.rel_path, scan.TOO_LARGE)
            return
        except FileNotFoundError:
            # Deleted between the walk and the read: it is gone, marked at the end.
            self.skip(item.rel_path, scan.VANISHED)
            return
        except fsaccess.NotAFile:
            self.skip(item.rel_path, scan.NOT_A_FILE)
            return
        except (fsaccess.HiddenName, fsaccess.BadComponent):
            self.skip(item.rel_path, scan.HIDDEN)
            return
        except PermissionError as exc:
            self.present.add(item.rel_path)
            self.error("nicht_lesbar", item.rel_path, str(exc))
            return
        except OSError as exc:
            self.present.add(item.rel_path)
            if exc.errno == errno.ELOOP:
                # A link swapped in for the file or a folder on its way since the walk: not
                # followed, and the row keeps what it had (the next run sees the link).
                self.error("link_schleife", item.rel_path, str(exc))
                return
            self.error("lesefehler", item.rel_path, str(exc))
            return
        if known is not None and known.inhalt_hash == digest:
            self.unchanged_by_hash(item, known)
            return
        parser = parser_for_format(item.format)
        assert parser is not None  # walk only yields files with a parser
        try:
            parsed = parser.parse(data)
        except ParseError as exc:
            if exc.step == "binaer":
                self.skip(item.rel_path, scan.BINARY)
                return
            self.present.add(item.rel_path)
            self.error(exc.step, item.rel_path, exc.message)
            return
        for note in parsed.notes:
            self.notes[note] += 1
        self.present.add(item.rel_path)
        self.pending.append(
            FileToIndex(
                root=self.root,
                rel_path=item.rel_path,
                format=item.format,
                digest=digest,
                text=parsed.text,
                size=item.size,
                mtime_ns=item.mtime_ns,
                ctime_ns=item.ctime_ns,
                inode=item.inode,
            )
        )

    def unchanged_by_hash(self, item: scan.Found, known: Known) -> None:
        """Same content. A file that was ``fort`` and came back is recognised by its hash."""
        came_back = known.state == IndexEntry.State.GONE
        if not came_back and known.same_key(item):
            # Verified by hash and nothing to record: last_seen_at is set in bulk at the end.
            self.present.add(item.rel_path)
            self.counts["unchanged"] += 1
            return
        with transaction.atomic():
            IndexEntry.objects.filter(pk=known.id).update(
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

    def learn_pending(self) -> None:
        """Learn the files waiting in the batch through the indexing service."""
        batch, self.pending = self.pending, []
        if not batch:
            return
        index_entries_refresh(items=batch, on_result=self.learned)

    def learned(self, result: RefreshResult) -> None:
        if result.status == RefreshStatus.FAILED:
            self.error(result.step, result.rel_path, result.message)
            return
        for note in result.notes:
            self.notes[note] += 1
        self.notes[f"quelle_{result.source}"] += 1
        self.counts["new" if result.status == RefreshStatus.NEW else "changed"] += 1
        hook(AFTER_WRITE)

    def finish(self, existing: dict[str, tuple[Any, ...]], unsettled: set[str]) -> None:
        """``existing``: rel_path -> a row of KNOWN_SQL's shape (state at index 7), every row
        not settled by the fast path that was loaded; ``unsettled``: the paths of the stored
        fast-path keys the walk did not settle (present rows, gone unless read this run)."""
        now = timezone.now()
        present = self.present
        present_state = IndexEntry.State.PRESENT
        gone = [
            path
            for path, row in existing.items()
            if row[7] == present_state and path not in present
        ]
        gone.extend(path for path in unsettled - present if path not in existing)
        for start in range(0, len(gone), 2000):
            batch = gone[start : start + 2000]
            IndexEntry.objects.filter(root=self.root, rel_path__in=batch).update(
                state=IndexEntry.State.GONE
            )
        # Every row still present was seen by this completed run (the others were just marked
        # gone): one statement, and only for rows whose stamp is older than the granularity at
        # the run's start — none when the rescan's pipeline found none (rows written by this
        # run carry their own fresh stamp).
        if self.stale_rows:
            IndexEntry.objects.filter(
                root=self.root,
                state=IndexEntry.State.PRESENT,
                last_seen_at__lt=self.stale_before,
            ).update(last_seen_at=now)
        self.counts["gone"] = len(gone)


def wants_full_hash(root: FileRoot) -> bool:
    if not settings.FILES_FAST_PATH or root.last_full_hash_at is None:
        return True
    every: int = settings.FILES_FULL_HASH_EVERY_S
    return every == 0 or timezone.now() - root.last_full_hash_at >= timedelta(seconds=every)


def index_root_run(
    *,
    root_id: int,
    full_hash: bool | None = None,
    on_progress: ProgressFn | None = None,
    run_id: int | None = None,
) -> RunReport:
    """Walk one active root and bring its index up to date. Idempotent; safe to kill.

    ``run_id`` names the waiting ``IndexRun`` row this call runs (``index_run_enqueue``); a
    call without one (command line, tests) gets a row of its own. The report carries the id.
    """
    with root_lock(root_id) as got:
        if not got:
            if run_id is not None:
                run_skip(
                    run_id=run_id,
                    note="Entfallen: ein anderer Lauf dieses Ordners lief gerade und deckt ihn ab.",
                )
            return RunReport(root_id, "laeuft_schon", run_id=run_id)
        root = FileRoot.objects.select_related("user").filter(pk=root_id).first()
        if root is None:
            return RunReport(root_id, "nicht_aktiv", run_id=run_id)
        full = wants_full_hash(root) if full_hash is None else full_hash
        run = run_claim(root=root, run_id=run_id, full_hash=full)
        if run is None:
            # A redelivered message of a run that beat requeued (or that finished): stale.
            return RunReport(root_id, "ersetzt", full, run_id=run_id)
        report = RunReport(root_id, "abgebrochen", full, run_id=run.pk)
        try:
            report = _index_root(root, run, full=full, on_progress=on_progress)
        finally:
            if report.outcome == "abgebrochen":
                # An exception escaped (not a kill: that leaves the row to beat's reaper).
                run_publish(
                    run=run,
                    state=IndexRun.State.ABORTED,
                    done=int((run.progress or {}).get("done", 0)),
                    total=int((run.progress or {}).get("total", 0)),
                    counts=run.counts or {},
                    finished=True,
                    note="Der Lauf brach mit einem Fehler ab; der nächste Lauf versucht es wieder.",
                )
        return report


def _index_root(
    root: FileRoot, run: IndexRun, *, full: bool, on_progress: ProgressFn | None
) -> RunReport:
    if root.state != FileRoot.State.ACTIVE:
        run_publish(
            run=run,
            state=IndexRun.State.NOT_ACTIVE,
            done=0,
            total=0,
            counts={},
            finished=True,
            note="Der Ordner ist nicht aktiv; nichts gelesen.",
        )
        return RunReport(root.pk, "nicht_aktiv", full, run_id=run.pk)
    # DESIGN.md "Files": boundary and resolved path again at every run (a swapped link), and
    # the root opened once as a descriptor that is the released directory (device, inode).
    opened = root_open(root, user=root.user)
    if isinstance(opened, RootPathCheck) and opened.refused:
        run_publish(
            run=run,
            state=IndexRun.State.ABORTED,
            done=0,
            total=0,
            counts={},
            finished=True,
            note=opened.reason,
            root_fields={"last_error": opened.reason},
        )
        return RunReport(root.pk, opened.outcome, full, run_id=run.pk)
    started = run.started_at or timezone.now()
    try:
        if isinstance(opened, RootPathCheck):
            raise scan.RootMissing(root.path)
        worker = _Run(root, run, full_hash=full, on_progress=on_progress, root_fd=opened.fd)
        try:
            total, counts = worker.execute()
        finally:
            worker.dirs.close()
            opened.close()
    except scan.RootMissing:
        counts = empty_counts()
        counts["root_missing"] = True
        message = (
            f"Das Verzeichnis {root.path} ist nicht mehr da oder nicht lesbar; "
            "die Indexzeilen bleiben erhalten."
        )
        run_publish(
            run=run,
            state=IndexRun.State.ROOT_MISSING,
            done=0,
            total=0,
            counts=counts,
            finished=True,
            note=message,
            root_fields={"last_error": message},
        )
        return RunReport(root.pk, "verzeichnis_fehlt", full, counts, run_id=run.pk)
    root_fields: dict[str, Any] = {"last_error": ""}
    if full:
        root_fields["last_full_hash_at"] = started
    run_publish(
        run=run,
        state=IndexRun.State.DONE,
        done=total,
        total=total,
        counts=counts,
        finished=True,
        root_fields=root_fields,
    )
    if on_progress is not None:
        on_progress(total, total)
    return RunReport(root.pk, "fertig", full, counts, run_id=run.pk)
