"""Walking a root: what the watcher would read, and what it skips and why.

Shared by the dry run the gate shows and by the watcher itself, so the count the person
consented to and the count the watcher indexes come from the same rules. Nothing here opens a
file for writing; files are opened only through ``open_readonly``.
"""

from __future__ import annotations

import errno
import fnmatch
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from files.boundary import is_inside
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
    """A file the watcher would read, with the fast-path key from the walk's own lstat.

    A tuple on purpose: a rescan builds one per file, and ``item[2:6]`` (size, mtime_ns,
    ctime_ns, inode; one slice) is what the fast path compares with the stored key
    (``files.watcher.run``). Keep the field order."""

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


def open_readonly(path: str) -> int:
    """The only way the file service opens a file: O_RDONLY, never following a final symlink
    (a link swapped in after the walk must not lead out of the root)."""
    return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))


def _matches(rel_path: str, globs: list[str]) -> bool:
    name = rel_path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(rel_path, g) or fnmatch.fnmatch(name, g) for g in globs)


def _link_reason(entry_path: str, root: Path) -> str:
    try:
        os.stat(entry_path)
    except OSError as exc:
        return LINK_LOOP if exc.errno == errno.ELOOP else LINK_BROKEN
    target = Path(os.path.realpath(entry_path))
    if not is_inside(target, root):
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
) -> Iterator[Found | Skip]:
    """Yield every file the watcher would read and every skip with its reason, in a stable
    (sorted) order. Raises ``RootMissing`` when ``root`` itself cannot be listed."""
    include = include or []
    exclude = exclude or []
    try:
        if not root.is_dir():
            raise RootMissing(str(root))
    except OSError as exc:
        raise RootMissing(str(root)) from exc
    stack: list[str] = [str(root)]
    root_str = str(root)
    while stack:
        directory = stack.pop()
        rel_dir = os.path.relpath(directory, root_str)
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except FileNotFoundError:
            if directory == root_str:
                raise RootMissing(root_str) from None
            yield Skip(rel_dir, VANISHED)
            continue
        except OSError:
            if directory == root_str:
                raise RootMissing(root_str) from None
            yield Skip(rel_dir, UNREADABLE)
            continue
        subdirs: list[str] = []
        cut = len(root_str) + 1
        for entry in entries:
            rel = entry.path[cut:]
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
            try:
                if entry.is_symlink():
                    yield Skip(rel, _link_reason(entry.path, root))
                    continue
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
                    continue
                if not entry.is_file(follow_symlinks=False):
                    yield Skip(rel, NOT_A_FILE)
                    continue
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                yield Skip(rel, VANISHED)
                continue
            except OSError:
                yield Skip(rel, UNREADABLE)
                continue
            if (exclude and _matches(rel, exclude)) or (include and not _matches(rel, include)):
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
                entry.path,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_ino,
                parser.format,
            )
        # Depth-first in name order: push reversed so the first name is walked first.
        stack.extend(reversed(subdirs))


@dataclass
class DryRun:
    resolved_path: str
    files: int = 0
    total_bytes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    # The first SKIPPED_LISTED skipped files by name: [{"path", "reason"}] (the page lists them).
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    root_missing: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "resolved_path": self.resolved_path,
            "files": self.files,
            "total_bytes": self.total_bytes,
            "skipped": dict(self.skipped),
            "skipped_files": list(self.skipped_files),
        }


def _head_is_binary(found: Found) -> bool:
    try:
        fd = open_readonly(found.path)
    except OSError:
        return False
    try:
        return looks_binary(os.read(fd, BINARY_PROBE))
    finally:
        os.close(fd)


def dry_run(
    root: Path, *, include: list[str] | None, exclude: list[str] | None, max_bytes: int
) -> DryRun:
    """What indexing ``root`` would do, without writing anything anywhere."""
    result = DryRun(str(root))
    skipped: Counter[str] = Counter()

    def skip(rel_path: str, reason: str) -> None:
        skipped[reason] += 1
        if len(result.skipped_files) < SKIPPED_LISTED:
            result.skipped_files.append({"path": rel_path, "reason": reason})

    try:
        for item in walk(root, include=include, exclude=exclude, max_bytes=max_bytes):
            if isinstance(item, Skip):
                skip(item.rel_path, item.reason)
            elif item.format not in {"pdf", "docx"} and _head_is_binary(item):
                skip(item.rel_path, BINARY)
            else:
                result.files += 1
                result.total_bytes += item.size
    except RootMissing:
        result.root_missing = True
    result.skipped = dict(sorted(skipped.items()))
    return result
