"""File-system access that a swapped link cannot redirect (DESIGN.md "Files"; issue 27).

Every directory is opened one component at a time, each with ``O_DIRECTORY | O_NOFOLLOW``
relative to its parent's descriptor, from ``/`` down to the released root; every file and
subdirectory of the root is reached the same way relative to the root's descriptor, and a
file is opened with ``O_NOFOLLOW``. No path string is handed to the kernel to resolve, so an
atomic swap of any component for a link (``renameat2(…, RENAME_EXCHANGE)``) makes the open
fail instead of leading elsewhere; a swap for a real directory elsewhere is caught by the
device and inode stored at release (``files.boundary.root_open``).

Why one ``openat`` per component and not ``openat2(RESOLVE_NO_SYMLINKS)``: the standard library
has no ``openat2``, a ctypes call needs the syscall number per architecture and a fallback
for kernels before 5.6 anyway, and a root path has a handful of components (a few
microseconds per read). This module is the fallback and the only path.

Hidden names (a leading dot) are refused here too (``HiddenName``), whatever the caller
checked before. Nothing here opens anything for writing.
"""

from __future__ import annotations

import errno
import os
import stat

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in for a file must not hang the read (checked with fstat after).
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | O_CLOEXEC | os.O_NONBLOCK


class HiddenName(ValueError):
    """A path component that is hidden (leading dot): not entered."""


class BadComponent(ValueError):
    """A path component that would leave its directory ('..') or is empty."""


class NotAFile(OSError):
    """The name is not a regular file (a FIFO, a socket, a device)."""


def signed64(value: int) -> int:
    """``st_dev`` and ``st_ino`` are unsigned 64-bit; PostgreSQL's bigint is signed."""
    return value - (1 << 64) if value >= (1 << 63) else value


def parts_of(rel_path: str) -> list[str]:
    """The components of a path relative to a root: '' and '.' dropped, '..' refused."""
    out: list[str] = []
    for part in rel_path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise BadComponent(rel_path)
        if part.startswith("."):
            raise HiddenName(part)
        out.append(part)
    return out


def _open_dir_in(parent: int, name: str) -> int:
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent)
    except NotADirectoryError:
        # O_DIRECTORY | O_NOFOLLOW on a link answers ENOTDIR: say ELOOP ("a link") for it.
        try:
            st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name) from None
        if stat.S_ISLNK(st.st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _descend(fd: int, parts: list[str], *, hidden_ok: bool) -> int:
    """Open ``parts`` one below the other from the directory ``fd``, which this takes over
    (closed here on every path); returns the last one's descriptor. '..' is refused always,
    a hidden component unless ``hidden_ok``."""
    try:
        for part in parts:
            if part in ("", "."):
                continue
            if part == "..":
                raise BadComponent(part)
            if part.startswith(".") and not hidden_ok:
                raise HiddenName(part)
            child = _open_dir_in(fd, part)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir_path(path: str) -> int:
    """An absolute directory path opened from ``/`` one component at a time, never following
    a link on the way (ELOOP names a link, ENOTDIR a file). Hidden components are allowed here
    (the boundary check decides about the root's own path); '..' is refused."""
    if not path.startswith("/"):
        raise BadComponent(path)
    return _descend(os.open("/", DIR_FLAGS), path.split("/"), hidden_ok=True)


def open_dir_at(base: int, parts: list[str]) -> int:
    """The directory ``parts`` below the directory ``base`` (a new descriptor, even for [])."""
    return _descend(os.dup(base), parts, hidden_ok=False)


def open_file_in(directory: int, name: str) -> int:
    """A regular file in ``directory``, read-only, never through a link; a folder raises
    ``IsADirectoryError``, anything else that is not a regular file ``NotAFile``."""
    if name.startswith("."):
        raise HiddenName(name)
    fd = os.open(name, FILE_FLAGS, dir_fd=directory)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(mode):
            raise NotAFile(errno.ENODEV, "not a regular file", name)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file_at(base: int, rel_path: str) -> int:
    """The regular file ``rel_path`` below ``base``, each component opened without following."""
    parts = parts_of(rel_path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), rel_path)
    directory = open_dir_at(base, parts[:-1])
    try:
        return open_file_in(directory, parts[-1])
    finally:
        os.close(directory)


def read_fd(fd: int, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes (one more than allowed tells the caller it was cut)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_at(base: int, rel_path: str, limit: int) -> bytes:
    fd = open_file_at(base, rel_path)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def lstat_at(base: int, rel_path: str) -> os.stat_result:
    """lstat of ``rel_path`` below ``base``, its directories reached without following."""
    parts = parts_of(rel_path)
    if not parts:
        return os.fstat(base)
    directory = open_dir_at(base, parts[:-1])
    try:
        return os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
    finally:
        os.close(directory)


class DirCache:
    """Files below a root descriptor, with the directory of the last file kept open: the
    watcher reads files in walk order, so most files share the directory of the one before."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self._rel = ""
        self._fd = root_fd

    def directory(self, rel_dir: str) -> int:
        if rel_dir != self._rel:
            fd = open_dir_at(self.root_fd, parts_of(rel_dir))
            self._drop()
            self._rel, self._fd = rel_dir, fd
        return self._fd

    def _drop(self) -> None:
        if self._fd != self.root_fd:
            os.close(self._fd)
        self._rel, self._fd = "", self.root_fd

    def close(self) -> None:
        self._drop()
