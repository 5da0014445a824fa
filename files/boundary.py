"""The outer boundary of releases (seed 004 §7, "drei Riegel"; DESIGN.md "Files").

Three bolts, in this order: a configured boundary (``NOVABERG_FILES_BOUNDARY``), the path
resolved *before* the check (``~``, relative, ``..``, symlinks), and the check on the resolved
path. An empty boundary means nothing can be released (fail closed). A refusal here is status
``abgelehnt`` with a named step and a German reason, never ``fehler``: nothing went wrong, the
wall did its job.

Beyond the seed (seed 004 §1a.5 names the price "Der Rand prüft den Pfad, nicht das Paar"): an
entry may hold ``{username}``, which makes that entry a fence per person; a release is checked
against the requesting person's boundary only. Nova's own knowledge zone
(``NOVABERG_KNOWLEDGE_DIR``) is never releasable, nor a folder that contains it.

The same check runs again at every read and every watcher run (``root_path_still_valid``): a
released folder later swapped for a link (inside or outside the boundary) is not followed.
Past the check on the path string, the root is opened as a directory descriptor without
following a link on any component (``files.fsaccess``) and compared with the device and inode
stored at release (``root_open``); every file is then reached relative to that descriptor.

A root released before identities were stored (``dir_device`` NULL) gets its identity recorded
by the first check that passes, from the descriptor opened without following any link: that
descriptor is the directory that sits at the released path right now, reached through real
directories only, and the path passed the boundary just before — exactly what a fresh release
would record, never weaker. From then on, a directory exchanged in its place is refused.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings

from files import fsaccess

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from files.models import FileRoot

USERNAME_PLACEHOLDER = "{username}"
# ext4, xfs, btrfs: a single name is at most 255 bytes; the kernel answers ENAMETOOLONG past it.
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4096
# Steps of ``check`` that mean "this directory is not there", not "this is not allowed".
MISSING_STEPS = frozenset({"nicht_gefunden", "kein_verzeichnis"})


@dataclass(frozen=True)
class BoundaryResult:
    ok: bool
    resolved: str
    step: str = ""
    reason: str = ""

    @property
    def status(self) -> str:
        return "ok" if self.ok else "abgelehnt"


def path_text_problem(raw: str) -> BoundaryResult | None:
    """A refusal for text that cannot name a path on this system, else None: a NUL byte, text
    that is not encodable, a single name over 255 bytes or a path over 4096 bytes (the file
    system would answer ENAMETOOLONG)."""
    if "\x00" in raw:
        return BoundaryResult(False, "", "kein_pfad", "Ich habe keinen Pfad erkannt.")
    try:
        encoded = raw.encode("utf-8")
    except UnicodeEncodeError:
        return BoundaryResult(
            False,
            "",
            "pfad_unlesbar",
            "Dieser Pfad enthält Zeichen, die kein Dateiname sein können.",
        )
    if len(encoded) > PATH_MAX_BYTES:
        return BoundaryResult(
            False,
            "",
            "pfad_zu_lang",
            f"Dieser Pfad ist länger als {PATH_MAX_BYTES} Bytes; so einen Pfad gibt es nicht.",
        )
    if any(len(part) > NAME_MAX_BYTES for part in encoded.split(b"/")):
        return BoundaryResult(
            False,
            "",
            "name_zu_lang",
            f"Ein Name in diesem Pfad ist länger als {NAME_MAX_BYTES} Bytes; "
            "so einen Ordner oder eine Datei gibt es nicht.",
        )
    return None


def resolve_path(raw: str) -> Path:
    """Resolve the way the file system will: ``~``, relative (against FILES_BASE_DIR), ``..``
    and every symlink on the way. Never raises for a symlink loop (realpath stops there)."""
    text = raw.strip().strip("\"'")
    expanded = Path(os.path.expanduser(text))
    if not expanded.is_absolute():
        expanded = Path(settings.FILES_BASE_DIR) / expanded
    return Path(os.path.realpath(expanded))


def safe_username(user: User | None) -> str | None:
    """The user's name as one path segment, or None when it could leave its place in the
    boundary entry ('/', '..', a NUL byte, empty, hidden)."""
    if user is None:
        return None
    name = str(user.get_username())
    if not name or name != name.strip() or "/" in name or "\\" in name or "\x00" in name:
        return None
    if ".." in name or name.startswith("."):
        return None
    return name


def boundary_dirs(user: User | None) -> list[Path]:
    """The requesting person's boundary: global entries as they are, ``{username}`` entries
    with that person's name (left out when the name is unusable or nobody asks)."""
    name = safe_username(user)
    out: list[Path] = []
    for entry in settings.FILES_BOUNDARY:
        if USERNAME_PLACEHOLDER in entry:
            if name is None:
                continue
            entry = entry.replace(USERNAME_PLACEHOLDER, name)
        # The boundary is resolved too: a boundary entry that is itself a link means its target.
        out.append(Path(os.path.realpath(os.path.expanduser(entry))))
    return out


def knowledge_zone() -> Path:
    # Read the setting only: the files app does not import the knowledge app.
    return Path(os.path.realpath(os.path.expanduser(str(settings.KNOWLEDGE_DIR))))


def is_inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def check(raw: str, *, user: User | None) -> BoundaryResult:
    """Resolve ``raw`` first, then check the resolved path against ``user``'s boundary."""
    if not raw or not raw.strip():
        return BoundaryResult(False, "", "kein_pfad", "Ich habe keinen Pfad erkannt.")
    problem = path_text_problem(raw)
    if problem is not None:
        return problem
    try:
        resolved = resolve_path(raw)
    except (OSError, ValueError) as exc:
        # realpath can fail midway when a component is swapped while it resolves (EINVAL from
        # readlink on what was a link a moment ago): a refusal, never a 500.
        return BoundaryResult(
            False,
            "",
            "pfad_unlesbar",
            "Dieser Pfad lässt sich gerade nicht auflösen "
            f"({getattr(exc, 'strerror', None) or type(exc).__name__}).",
        )
    shown = str(resolved)
    zone = knowledge_zone()
    if is_inside(resolved, zone) or is_inside(zone, resolved):
        return BoundaryResult(
            False,
            shown,
            "wissenszone",
            f"{shown} ist Novas eigene Wissensablage oder enthält sie ({zone}). Dort pflegt sie "
            "ihr eigenes Wissen; als freigegebener Ordner kann ich sie nicht aufnehmen.",
        )
    bounds = boundary_dirs(user)
    if not bounds:
        reason = (
            "Für dich ist kein erlaubter Bereich für Ordner eingerichtet "
            "(NOVABERG_FILES_BOUNDARY nennt keinen Ordner, der für deinen Namen gilt), "
            "deshalb kann ich keinen Ordner freigeben."
            if settings.FILES_BOUNDARY
            else "Es ist kein erlaubter Bereich für Ordner eingerichtet "
            "(NOVABERG_FILES_BOUNDARY ist leer), deshalb kann ich keinen Ordner freigeben."
        )
        return BoundaryResult(False, shown, "kein_aussenrand", reason)
    if not any(is_inside(resolved, base) for base in bounds):
        allowed = ", ".join(str(b) for b in bounds)
        return BoundaryResult(
            False,
            shown,
            "ausserhalb_aussenrand",
            f"{shown} liegt außerhalb des erlaubten Bereichs ({allowed}); dort kann ich nichts "
            "freigeben.",
        )
    try:
        exists, is_dir = resolved.exists(), resolved.is_dir()
    except OSError as exc:  # ENAMETOOLONG, EACCES on a parent, ...
        return BoundaryResult(
            False,
            shown,
            "pfad_unlesbar",
            f"{shown} lässt sich nicht prüfen ({exc.strerror or type(exc).__name__}).",
        )
    if not exists:
        return BoundaryResult(
            False, shown, "nicht_gefunden", f"Das Verzeichnis {shown} gibt es nicht."
        )
    if not is_dir:
        return BoundaryResult(
            False, shown, "kein_verzeichnis", f"{shown} ist kein Verzeichnis, sondern eine Datei."
        )
    if any(part.startswith(".") for part in resolved.parts[1:]):
        return BoundaryResult(
            False,
            shown,
            "verborgen",
            f"{shown} ist ein verborgenes Verzeichnis; verborgene Ordner betrete ich nicht.",
        )
    return BoundaryResult(True, shown)


@dataclass(frozen=True)
class RootPathCheck:
    """The outcome of re-checking a released root: ``ok``, ``fehlt`` (the folder is gone; the
    watcher keeps the rows and says so) or a refusal step (``pfad_geaendert``,
    ``ausserhalb_aussenrand``, ``kein_aussenrand``, ``wissenszone``, ``verborgen``, ...)."""

    outcome: str
    resolved: str = ""
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def refused(self) -> bool:
        return self.outcome not in {"ok", "fehlt"}


def _path_check(root: FileRoot, *, user: User) -> RootPathCheck:
    """The check on the path string: it must resolve to itself and pass ``user``'s boundary."""
    try:
        resolved = str(resolve_path(root.path))
    except (OSError, ValueError):
        resolved = ""
    if resolved != root.path:
        return RootPathCheck(
            "pfad_geaendert",
            resolved,
            f"Der freigegebene Ordner {root.path} zeigt inzwischen woandershin"
            + (f" ({resolved})" if resolved else "")
            + "; dem folge ich nicht. Gib den Ordner neu frei, wenn das so gewollt ist.",
        )
    checked = check(root.path, user=user)
    if checked.ok:
        return RootPathCheck("ok", resolved)
    if checked.step in MISSING_STEPS:
        return RootPathCheck("fehlt", resolved, checked.reason)
    return RootPathCheck(
        checked.step,
        resolved,
        f"Den freigegebenen Ordner {root.path} lese ich nicht mehr: {checked.reason}",
    )


def _changed(root: FileRoot, what: str) -> RootPathCheck:
    return RootPathCheck(
        "pfad_geaendert",
        root.path,
        f"Der freigegebene Ordner {root.path} {what}; dem folge ich nicht. "
        "Gib den Ordner neu frei, wenn das so gewollt ist.",
    )


@dataclass
class OpenRoot:
    """A released root opened as a directory descriptor and checked (``root_open``). Close it
    (or use it as a context manager); everything below it is reached relative to ``fd``."""

    fd: int
    path: str
    device: int
    inode: int

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> OpenRoot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def identity_of(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return fsaccess.signed64(st.st_dev), fsaccess.signed64(st.st_ino)


def root_open(root: FileRoot, *, user: User) -> OpenRoot | RootPathCheck:
    """Check ``root`` and open it once: the path string passes the boundary (as at release),
    then the directory is opened from ``/`` component by component without following a link,
    and its device and inode must be the ones stored at release. Returns the open root, or the
    refusal (``pfad_geaendert`` for a link or another directory in its place) or ``fehlt``."""
    fence = _path_check(root, user=user)
    if not fence.ok:
        return fence
    try:
        fd = fsaccess.open_dir_path(root.path)
    except FileNotFoundError:
        return RootPathCheck("fehlt", root.path, f"Das Verzeichnis {root.path} gibt es nicht.")
    except fsaccess.BadComponent:
        return _changed(root, "ist kein gültiger Pfad mehr")
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _changed(root, "führt jetzt über eine Verknüpfung")
        if exc.errno == errno.ENOTDIR:
            return RootPathCheck(
                "fehlt", root.path, f"{root.path} ist kein Verzeichnis mehr, sondern eine Datei."
            )
        return RootPathCheck(
            "fehlt",
            root.path,
            f"{root.path} lässt sich nicht öffnen ({exc.strerror or type(exc).__name__}).",
        )
    device, inode = identity_of(fd)
    if root.dir_device is None or root.dir_inode is None:
        # Released before identities were stored (module docstring): record it now.
        if root.pk is not None:
            type(root).objects.filter(pk=root.pk, dir_device__isnull=True).update(
                dir_device=device, dir_inode=inode
            )
        root.dir_device, root.dir_inode = device, inode
    elif (root.dir_device, root.dir_inode) != (device, inode):
        os.close(fd)
        return _changed(
            root,
            "ist nicht mehr derselbe Ordner wie bei der Freigabe (ausgetauscht oder neu angelegt)",
        )
    return OpenRoot(fd, root.path, device, inode)


def root_path_still_valid(root: FileRoot, *, user: User) -> RootPathCheck:
    """Check a released root again, as at release: the stored path was resolved then, so it
    must resolve to itself now (a folder swapped for a link resolves elsewhere) and still lie
    inside ``user``'s boundary (the boundary may have changed since); and the directory there,
    opened without following a link, must be the one released (device and inode)."""
    opened = root_open(root, user=user)
    if isinstance(opened, RootPathCheck):
        return opened
    opened.close()
    return RootPathCheck("ok", root.path)
