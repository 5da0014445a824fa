"""Walking a root: what the watcher would read, and what it skips and why.

Shared by the dry run the gate shows and by the watcher itself, so the count the person
consented to and the count the watcher indexes come from the same rules. Nothing here opens a
file for writing; files are opened only through ``open_readonly``.

The walk lists every directory through a descriptor reached from the root's descriptor one
component at a time without following a link (``files.fsaccess``), and takes every lstat it
needs while that descriptor is open: a directory swapped for a link during the walk is not
entered, and the fast path's key is the key of the file below the root (issue 27).
"""

from __future__ import annotations

import errno
import fnmatch
import operator
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from files import fsaccess
from files.boundary import identity_of, is_inside
from files.watcher.parsers import BINARY_PROBE, PARSERS, Parser, looks_binary

# Skip reasons (German names, shown in the UI and the gate).
HIDDEN = "verborgen"
LINK_OUT = "link_nach_aussen"
LINK_IN = "link_innen"
LINK_BROKEN = "link_kaputt"
LINK_LOOP = "link_schleife"
TOO_LARGE = "zu_gross"
BINARY = "binaer"
FORMAT = "format"
EXCLUDED = "ausgeschlossen"
VANISHED = "verschwunden"
UNREADABLE = "nicht_lesbar"
ODD_NAME = "pfad_unlesbar"
NOT_A_FILE = "keine_datei"
# How many skipped files a dry run or a watcher run names one by one (the counts stay complete).
SKIPPED_LISTED = 200


# Parser by lower-cased extension, as ``parsers.parser_for_name`` finds it, without its
# ``os.path.splitext`` per file (hidden names, the only case where they differ, never get here).
_BY_EXTENSION: dict[str, Parser] = {ext: p for p in PARSERS for ext in p.extensions}


def _parser_for(name: str) -> Parser | None:
    dot = name.rfind(".")
    return _BY_EXTENSION.get(name[dot:].lower()) if dot > 0 else None


class RootMissing(Exception):
    """The root directory itself is gone or unreadable (rows are kept, the state is shown)."""


class Found(NamedTuple):
    """A file the watcher would read, with the fast-path key from the walk's own lstat
    (a tuple: cheap to build; a rescan builds one only for a file ``FastPath`` did not settle)."""

    rel_path: str
    path: str
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    format: str


class Skip(NamedTuple):
    rel_path: str
    reason: str


# The fast-path key of a file as the database returns it: (rel_path, size, mtime_ns,
# ctime_ns, inode); ``size`` is None for a row that may not skip the read.
FastKey = tuple[str, int | None, int | None, int | None, int | None]


# How many directory entries a rescan's walk lists and lstats ahead while the stored keys are
# still on their way from the database (``FastPath.load``): the query runs beside the walk.
LOOKAHEAD_ENTRIES = 50_000


class FastPath:
    """The stored fast-path keys of a root, for ``walk`` to settle unchanged files in place.

    ``load`` returns the stored (rel_path, size, mtime_ns, ctime_ns, inode) of the present
    rows; ``size`` is None for a row the walk's own rules would not let skip the read
    whatever the name (``run.FAST_KEYS_SQL``: no hash yet, a format without a parser, over the
    size limit). They are kept by path as the database sent them, so the walk compares a file
    with one dict look-up and four integers from the entry's cached lstat: no tuple or object
    is built per unchanged file. The walk calls ``load`` only once it has listed and lstat-ed
    up to ``LOOKAHEAD_ENTRIES`` entries (or all), so a query sent before the walk runs beside
    it. A regular file (a symlink is never settled) with a name that is not hidden, whose
    stored key matches and that passes the root's include/exclude globs is *settled*:
    counted, its key taken out, and not yielded — no ``Found``, no sort, no further call for
    it. Everything else is yielded as without a fast path."""

    __slots__ = ("_load", "keys", "poll", "settled")

    def __init__(
        self, load: Callable[[], list[FastKey]], poll: Callable[[], object] | None = None
    ) -> None:
        self._load = load
        # Called after each directory listed ahead: lets the caller take in what the database
        # sent so far (its socket buffer is smaller than the keys; a full one stalls it).
        self.poll = poll
        self.keys: dict[str, FastKey] | None = None
        self.settled = 0

    def ready(self) -> dict[str, FastKey]:
        if self.keys is None:
            self.keys = {key[0]: key for key in self._load()}
        return self.keys

    def unsettled(self) -> set[str]:
        """The paths of the stored keys the walk did not settle (changed or gone)."""
        return set(self.ready())  # a settled key is taken out


_by_name = operator.attrgetter("name")


# One directory listed ahead: its regular files (lstat cached by the entry), the rest, the
# skip reasons found while its descriptor was open (links, vanished entries) by name, and its
# path relative to the root with a trailing "/" ("" for the root).
_Listing = tuple[list[os.DirEntry[str]], list[os.DirEntry[str]], dict[str, str], str]


def _settle(
    listing: _Listing, fast: FastPath, include: list[str], exclude: list[str]
) -> list[os.DirEntry[str]]:
    """One directory's fast path (``FastPath``): settle the files whose key is stored, return
    every other entry for the full rules. One dict look-up per file."""
    keys = fast.ready()
    files, rest, _, prefix = listing
    globs = bool(include or exclude)
    settled = 0
    for entry in files:
        rel = prefix + entry.name
        key = keys.get(rel)
        if key is not None:
            st = entry.stat(follow_symlinks=False)  # cached by ``_list_ahead``
            if (
                key[1] == st.st_size
                and key[2] == st.st_mtime_ns
                and key[3] == st.st_ctime_ns
                and key[4] == st.st_ino
                and not (globs and _excluded(rel, include, exclude))
            ):
                del keys[rel]
                settled += 1
                continue
        rest.append(entry)
    fast.settled += settled
    return rest


def open_readonly(directory: int, name: str) -> int:
    """The only way the file service opens a file: O_RDONLY | O_NOFOLLOW, relative to the
    descriptor of its directory (reached from the root's without following a link); a regular
    file only (``fsaccess.open_file_in``)."""
    return fsaccess.open_file_in(directory, name)


def _matches(rel_path: str, globs: list[str]) -> bool:
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel_path, g) or fnmatch.fnmatch(name, g) for g in globs)


def _excluded(rel_path: str, include: list[str], exclude: list[str]) -> bool:
    return bool(exclude and _matches(rel_path, exclude)) or bool(
        include and not _matches(rel_path, include)
    )


def _link_reason(directory: int, name: str, root: str, rel: str) -> str:
    """Why a link is skipped: a label only, never followed to read anything."""
    try:
        os.stat(name, dir_fd=directory)
    except OSError as exc:
        return LINK_LOOP if exc.errno == errno.ELOOP else LINK_BROKEN
    target = Path(os.path.realpath(os.path.join(root, rel)))
    if not is_inside(target, Path(root)):
        return LINK_OUT
    # Pointing inside: the target is walked under its own path; following would index it twice
    # or, for a directory, loop.
    return LINK_IN


def walk(
    root: Path,
    *,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    max_bytes: int,
    fast: FastPath | None = None,
    dir_fd: int | None = None,
) -> Iterator[Found | Skip]:
    """Yield every file the watcher would read and every skip with its reason, in a stable
    (sorted) order. Raises ``RootMissing`` when ``root`` itself cannot be listed.

    ``dir_fd`` is the root's checked descriptor (``boundary.root_open``); without one the walk
    opens ``root`` itself, component by component without following a link. ``Found.path`` is
    informational: files are opened relative to the directory descriptors, never by it.

    With ``fast`` (a rescan), files whose stored key still matches are settled in place and
    not yielded (``FastPath``); the rest comes in the same order as without it."""
    root_str = str(root)
    if dir_fd is not None:
        yield from _walk_fd(dir_fd, root_str, include or [], exclude or [], max_bytes, fast)
        return
    try:
        own = fsaccess.open_dir_path(root_str)
    except (OSError, ValueError) as exc:
        raise RootMissing(root_str) from exc
    try:
        yield from _walk_fd(own, root_str, include or [], exclude or [], max_bytes, fast)
    finally:
        os.close(own)


def _walk_fd(
    root_fd: int,
    root_str: str,
    include: list[str],
    exclude: list[str],
    max_bytes: int,
    fast: FastPath | None,
) -> Iterator[Found | Skip]:
    stack: list[str] = [""]
    # Directories listed but not yet yielded: (rel path, listing or None, the skip reason).
    pending: list[tuple[str, _Listing | None, str]] = []
    buffered = 0
    while stack:
        rel_dir = stack.pop()
        try:
            if rel_dir:
                directory = fsaccess.open_dir_at(root_fd, rel_dir.split("/"))
            else:
                directory = root_fd
        except FileNotFoundError:
            pending.append((rel_dir, None, VANISHED))
        except (OSError, ValueError):
            # A link swapped in since the listing, or no longer readable: not entered.
            pending.append((rel_dir, None, UNREADABLE))
        else:
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
                prefix = rel_dir + "/" if rel_dir else ""
                subdirs, listing = _list_ahead(
                    entries, directory, root_str, prefix, keyed=fast is not None
                )
            except FileNotFoundError:
                if not rel_dir:
                    raise RootMissing(root_str) from None
                pending.append((rel_dir, None, VANISHED))
            except OSError:
                if not rel_dir:
                    raise RootMissing(root_str) from None
                pending.append((rel_dir, None, UNREADABLE))
            else:
                # Depth-first in name order: push reversed so the first name is walked first.
                stack.extend(reversed(subdirs))
                pending.append((rel_dir, listing, ""))
                buffered += len(entries)
            finally:
                if directory != root_fd:
                    os.close(directory)
        if fast is not None and fast.keys is None and buffered < LOOKAHEAD_ENTRIES and stack:
            if fast.poll is not None:
                fast.poll()
            continue  # list on while the stored keys are still loading
        for listed, held, reason in pending:
            if held is None:
                yield Skip(listed, reason)
                continue
            rest = _settle(held, fast, include, exclude) if fast is not None else held[1]
            yield from _items(rest, held[2], held[3], root_str, include, exclude, max_bytes)
        pending.clear()
        buffered = 0


def _list_ahead(
    entries: list[os.DirEntry[str]], directory: int, root: str, prefix: str, *, keyed: bool
) -> tuple[list[str], _Listing]:
    """The subdirectories the walk enters (name order, relative to the root), under
    ``_items``' rules: a name that is valid UTF-8 and not hidden, a directory that is not a
    symlink. Every syscall an entry needs happens here, while ``directory`` is open (an entry
    of ``os.scandir(fd)`` stats relative to that descriptor): the lstat of every regular file
    with a name that is not hidden (cached by the entry) and the reason of every link. With
    ``keyed`` (a rescan), the regular files are kept apart for ``_settle``."""
    subdirs: list[str] = []
    files: list[os.DirEntry[str]] = []
    rest: list[os.DirEntry[str]] = []
    notes: dict[str, str] = {}
    for entry in entries:
        name = entry.name
        try:
            if name[0] == ".":
                pass
            elif entry.is_dir(follow_symlinks=False):
                if not name.isascii():
                    name.encode("utf-8")
                subdirs.append(prefix + name)
            elif entry.is_symlink():
                notes[name] = _link_reason(directory, name, root, prefix + name)
            elif entry.is_file(follow_symlinks=False):
                entry.stat(follow_symlinks=False)
                if keyed:
                    files.append(entry)
                    continue
        except FileNotFoundError:
            notes[name] = VANISHED
        except OSError:
            notes[name] = UNREADABLE
        except UnicodeEncodeError:
            pass  # ``_items`` names the reason
        rest.append(entry)
    subdirs.sort()
    return subdirs, (files, rest, notes, prefix)


def _items(
    entries: list[os.DirEntry[str]],
    notes: dict[str, str],
    prefix: str,
    root: str,
    include: list[str],
    exclude: list[str],
    max_bytes: int,
) -> Iterator[Found | Skip]:
    """One directory's files and skips with their reasons, in name order. No syscall: what
    an entry needs was taken by ``_list_ahead`` while its directory was open."""
    entries.sort(key=_by_name)
    for entry in entries:
        rel = prefix + entry.name
        try:
            if not rel.isascii():
                rel.encode("utf-8")
        except UnicodeEncodeError:
            # Bytes that are not UTF-8 in a file name cannot be stored or cited.
            yield Skip(rel.encode("utf-8", "replace").decode("utf-8"), ODD_NAME)
            continue
        if entry.name.startswith("."):
            yield Skip(rel, HIDDEN)
            continue
        noted = notes.get(entry.name)
        if noted is not None:
            yield Skip(rel, noted)
            continue
        try:
            if entry.is_symlink():
                yield Skip(rel, LINK_BROKEN)  # a link always has a note; never followed
                continue
            if entry.is_dir(follow_symlinks=False):
                continue  # entered by ``_list_ahead``, under the same rules
            if not entry.is_file(follow_symlinks=False):
                yield Skip(rel, NOT_A_FILE)
                continue
            st = entry.stat(follow_symlinks=False)  # cached by ``_list_ahead``
        except FileNotFoundError:
            yield Skip(rel, VANISHED)
            continue
        except OSError:
            yield Skip(rel, UNREADABLE)
            continue
        if (include or exclude) and _excluded(rel, include, exclude):
            yield Skip(rel, EXCLUDED)
            continue
        parser = _parser_for(entry.name)
        if parser is None:
            yield Skip(rel, FORMAT)
            continue
        if st.st_size > max_bytes:
            yield Skip(rel, TOO_LARGE)
            continue
        yield Found(
            rel,
            f"{root}/{rel}",
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            parser.format,
        )


@dataclass
class DryRun:
    resolved_path: str
    files: int = 0
    total_bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    # The first SKIPPED_LISTED skipped files by name: [{"path", "reason"}] (the page lists them).
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    root_missing: bool = False
    # (st_dev, st_ino) of the directory walked, as stored on the root at release; not shown.
    identity: tuple[int, int] | None = None

    def as_json(self) -> dict[str, object]:
        return {
            "resolved_path": self.resolved_path,
            "files": self.files,
            "total_bytes": self.total_bytes,
            "skipped": dict(self.skipped),
            "skipped_files": list(self.skipped_files),
        }


def _head_is_binary(found: Found, dirs: fsaccess.DirCache) -> bool:
    parent, _, name = found.rel_path.rpartition("/")
    try:
        fd = open_readonly(dirs.directory(parent), name)
    except (OSError, ValueError):
        return False
    try:
        return looks_binary(os.read(fd, BINARY_PROBE))
    finally:
        os.close(fd)


def dry_run(
    root: Path, *, include: list[str] | None, exclude: list[str] | None, max_bytes: int
) -> DryRun:
    """What indexing ``root`` would do, without writing anything anywhere. ``identity`` is the
    (device, inode) of the directory walked: opened once, without following a link on any
    component, the one the person is asked about and the one a release stores."""
    result = DryRun(str(root))
    skipped: Counter[str] = Counter()

    def skip(rel_path: str, reason: str) -> None:
        skipped[reason] += 1
        if len(result.skipped_files) < SKIPPED_LISTED:
            result.skipped_files.append({"path": rel_path, "reason": reason})

    try:
        root_fd = fsaccess.open_dir_path(str(root))
    except (OSError, ValueError):
        result.root_missing = True
        return result
    dirs = fsaccess.DirCache(root_fd)
    try:
        result.identity = identity_of(root_fd)
        walked = walk(root, include=include, exclude=exclude, max_bytes=max_bytes, dir_fd=root_fd)
        for item in walked:
            if isinstance(item, Skip):
                skip(item.rel_path, item.reason)
            elif item.format not in {"pdf", "docx"} and _head_is_binary(item, dirs):
                skip(item.rel_path, BINARY)
            else:
                result.files += 1
                result.total_bytes += item.size
    except RootMissing:
        result.root_missing = True
    finally:
        dirs.close()
        os.close(root_fd)
    result.skipped = dict(sorted(skipped.items()))
    return result
