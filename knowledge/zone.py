"""The knowledge zone: the only place Nova writes (seed 004 §3a.3; DESIGN.md "Knowledge zone").

``NOVABERG_KNOWLEDGE_DIR`` holds one folder per (person, character) pair, named
``<user_id>-<character_id>``: stable across renames, and nothing a person types ends up in a
folder name. Rights hang on the zone, not on the caller: every write target goes through
``schreibziel_pruefen`` — resolve first (``~``, ``..``, links), then check the resolved path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from django.contrib.auth.models import User

from conversation.models import Character
from knowledge import conf

ALLOWED_SUFFIXES = (".md",)
MAX_PATH_CHARS = 1000


class Target(StrEnum):
    """Named outcomes of the write-target check (the German seed words)."""

    OK = "ok"
    KEIN_PFAD = "kein_pfad"
    AUSSERHALB_ZONE = "ausserhalb_zone"
    IN_FREIGABE = "in_freigabe"
    VERBORGEN = "verborgen"
    FALSCHE_ENDUNG = "falsche_endung"
    IST_VERZEICHNIS = "ist_verzeichnis"


REASONS: dict[Target, str] = {
    Target.KEIN_PFAD: "Ich habe keinen Dateipfad erkannt.",
    Target.AUSSERHALB_ZONE: (
        "{shown} liegt außerhalb meines Wissensordners; schreiben darf ich nur dort."
    ),
    Target.IN_FREIGABE: (
        "{shown} liegt in einem freigegebenen Verzeichnis ({root}); dort schreibe ich nie, "
        "das sind Aufzeichnungen der Person, nicht mein Wissen."
    ),
    Target.VERBORGEN: "{shown} ist verborgen; verborgene Dateien und Ordner fasse ich nicht an.",
    Target.FALSCHE_ENDUNG: (
        "{shown} ist keine Markdown-Datei; mein Wissen schreibe ich nur in .md-Dateien."
    ),
    Target.IST_VERZEICHNIS: "{shown} ist ein Ordner, keine Datei.",
}


@dataclass(frozen=True)
class WriteTarget:
    """Result of ``schreibziel_pruefen``. ``resolved`` and ``rel_path`` are set when ok."""

    step: Target
    reason: str = ""
    resolved: Path | None = None
    rel_path: str = ""

    @property
    def ok(self) -> bool:
        return self.step == Target.OK

    @property
    def status(self) -> str:
        return "ok" if self.ok else "abgelehnt"


def pair_folder_name(*, user_id: int, character_id: int) -> str:
    return f"{int(user_id)}-{int(character_id)}"


def pair_dir(*, user: User, character: Character, create: bool = False) -> Path:
    """The pair's zone folder (resolved). ``create`` makes it (mode 0700) if missing."""
    base = conf.knowledge_dir()
    folder = base / pair_folder_name(user_id=user.pk, character_id=character.pk)
    if create:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder.mkdir(exist_ok=True, mode=0o700)
    return folder


def _is_inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _released_roots() -> list[Path]:
    # Every root of anyone, in any state: requested, active and suspended roots are all the
    # person's material; a write there is never right (fail closed, seed 002 §1).
    from files.models import FileRoot

    roots = []
    for raw in FileRoot.objects.values_list("path", flat=True):
        roots.append(Path(os.path.realpath(raw)))
    return roots


def _refuse(step: Target, shown: str, **extra: str) -> WriteTarget:
    return WriteTarget(step=step, reason=REASONS[step].format(shown=shown, **extra))


def schreibziel_pruefen(path: str, *, user: User, character: Character) -> WriteTarget:
    """Check a write target for the pair. ``path`` is relative to the pair's zone folder or
    absolute. Order: resolve (``~``, ``..``, every link), then inside the pair's folder, not
    inside any released root, no hidden segment, an allowed extension, not a folder."""
    if not isinstance(path, str) or not path.strip() or "\x00" in path:
        return _refuse(Target.KEIN_PFAD, "")
    if len(path) > MAX_PATH_CHARS:
        return _refuse(Target.KEIN_PFAD, "")
    folder = pair_dir(user=user, character=character)
    # The zone base is resolved once (it may be a link by configuration); the pair's folder
    # inside it must not be one: a folder swapped for a link would move the whole zone.
    try:
        folder_resolved = Path(os.path.realpath(folder))
        if folder_resolved != folder:
            return _refuse(Target.AUSSERHALB_ZONE, str(folder_resolved))
        expanded = Path(os.path.expanduser(path.strip()))
        if not expanded.is_absolute():
            expanded = folder_resolved / expanded
        resolved = Path(os.path.realpath(expanded))
        roots = _released_roots()
    except (OSError, ValueError):
        # realpath can raise under a concurrent swap (EINVAL, ENAMETOOLONG): no target, no write.
        return _refuse(Target.KEIN_PFAD, "")
    shown = str(resolved)
    if not _is_inside(resolved, folder_resolved) or resolved == folder_resolved:
        if resolved == folder_resolved:
            return _refuse(Target.IST_VERZEICHNIS, shown)
        return _refuse(Target.AUSSERHALB_ZONE, shown)
    for root in roots:
        if _is_inside(resolved, root):
            return _refuse(Target.IN_FREIGABE, shown, root=str(root))
    rel = resolved.relative_to(folder_resolved)
    if any(part.startswith(".") for part in rel.parts):
        return _refuse(Target.VERBORGEN, shown)
    if resolved.suffix not in ALLOWED_SUFFIXES:
        return _refuse(Target.FALSCHE_ENDUNG, shown)
    if resolved.is_dir():
        return _refuse(Target.IST_VERZEICHNIS, shown)
    return WriteTarget(step=Target.OK, resolved=resolved, rel_path=rel.as_posix())
