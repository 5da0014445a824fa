"""Bytes on disk for the knowledge zone: one writer per file, atomic replace, no links.

- One writer per file: an ``fcntl`` lock on a hidden lock file beside it (processes on this
  machine) plus a PostgreSQL advisory lock on the pair and path (workers on other machines that
  share the zone). Both go with their process, so a killed writer never leaves a stale lock.
- Atomic replace: a hidden temp file in the same folder, fsync, rename over the target, fsync
  of the folder. A reader sees the old bytes or the new ones, never a mix.
- Every open is relative to the folder's descriptor with ``O_NOFOLLOW``: a link swapped in
  after the target check is refused, not followed. The folder itself is opened from ``/`` one
  component at a time, each with ``O_DIRECTORY | O_NOFOLLOW`` (``files.fsaccess``): a folder
  on the way swapped for a link (``renameat2(…, RENAME_EXCHANGE)``) makes the open fail with
  ELOOP instead of leading out of the zone. Paths here are resolved by
  ``zone.schreibziel_pruefen`` first, so a link by configuration never reaches this module.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import importlib
import os
import secrets
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from files.fsaccess import open_dir_path
from knowledge import conf

# pg_advisory_lock(classid, objid): classid names the knowledge write layer ("NK" + 1).
LOCK_CLASS = 0x4E4B01


class LockTimeout(Exception):
    pass


class TooLarge(Exception):
    pass


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hook(point: str) -> None:
    """Call the test hook at a named point of a write (tests only; see conf.test_hook).

    Points: ``vor_schreiben`` (intent stored, nothing on disk yet), ``vor_umbenennen`` (temp
    file complete and synced), ``nach_umbenennen`` (new bytes in place, database not settled).
    """
    spec = conf.test_hook()
    if not spec:
        return
    module, _, name = spec.partition(":")
    # Only test modules can be hooked in: the setting must not become a way to load code.
    if not module.startswith("knowledge.tests."):
        return
    getattr(importlib.import_module(module), name)(point)


@contextmanager
def _dir_fd(folder: Path) -> Iterator[int]:
    fd = open_dir_path(str(folder))
    try:
        yield fd
    finally:
        os.close(fd)


def make_dirs_below(folder: Path, rel_dir: Path) -> None:
    """Create the folders ``rel_dir`` below ``folder`` (mode 0700), each one relative to its
    parent's descriptor and entered with ``O_NOFOLLOW``: a component swapped for a link makes
    this fail (ELOOP / ENOTDIR) instead of creating a folder wherever the link points."""
    fd = open_dir_path(str(folder))
    try:
        for part in rel_dir.parts:
            if part in ("", "."):
                continue
            if part == ".." or "/" in part:
                raise OSError(errno.EINVAL, "not a plain folder name", part)
            try:
                os.mkdir(part, mode=0o700, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(
                part,
                os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                dir_fd=fd,
            )
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


def read_bytes(path: Path) -> bytes | None:
    """The file's bytes, or None when it does not exist. Refuses links and oversize files."""
    limit = conf.max_file_bytes()
    try:
        with _dir_fd(path.parent) as dfd:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
    except FileNotFoundError:
        return None
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise TooLarge(f"{path.name} is larger than {limit} bytes")
    return data


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: temp file in the same folder, fsync, rename, fsync dir."""
    tmp = f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    with _dir_fd(path.parent) as dfd:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
        try:
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                os.fsync(fd)
            finally:
                os.close(fd)
            hook("vor_umbenennen")
            os.rename(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except FileNotFoundError:
                pass
            raise
        os.fsync(dfd)
    hook("nach_umbenennen")


def remove(path: Path) -> None:
    with _dir_fd(path.parent) as dfd:
        os.unlink(path.name, dir_fd=dfd)
        os.fsync(dfd)


def remove_stale_temps(path: Path) -> int:
    """Temp files of ``path`` left by a writer that was killed before its rename."""
    removed = 0
    prefix = f".{path.name}."
    try:
        dfd = open_dir_path(str(path.parent))
    except FileNotFoundError:
        return 0
    try:
        for name in os.listdir(dfd):
            if name.startswith(prefix) and name.endswith(".tmp"):
                try:
                    os.unlink(name, dir_fd=dfd)
                    removed += 1
                except FileNotFoundError:
                    pass
    finally:
        os.close(dfd)
    return removed


def _advisory_key(key: str) -> int:
    # Two int4 keys: the class and a 31-bit checksum of the pair's path (collisions only make
    # two files share a lock, never let two writers into one file).
    return zlib.crc32(key.encode("utf-8")) & 0x7FFFFFFF


@contextmanager
def file_lock(path: Path, *, key: str) -> Iterator[None]:
    """Hold the one-writer lock for ``path``; raises LockTimeout after conf.lock_timeout_s."""
    deadline = time.monotonic() + conf.lock_timeout_s()
    lock_name = f".{path.name}.lock"
    with _dir_fd(path.parent) as dfd:
        fd = os.open(lock_name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600, dir_fd=dfd)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    raise LockTimeout(str(path)) from exc
                time.sleep(0.05)
        objid = _advisory_key(key)
        with connection.cursor() as cur:
            while True:
                cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, objid])
                if cur.fetchone()[0]:
                    break
                if time.monotonic() >= deadline:
                    raise LockTimeout(str(path))
                time.sleep(0.05)
        try:
            yield
        finally:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, objid])
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
