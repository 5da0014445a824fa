"""The outer boundary of releases (seed 004 §7, "drei Riegel"; DESIGN.md "Files").

Three bolts, in this order: a configured boundary (``NOVABERG_FILES_BOUNDARY``), the path
resolved *before* the check (``~``, relative, ``..``, symlinks), and the check on the resolved
path. An empty boundary means nothing can be released (fail closed). A refusal here is status
``abgelehnt`` with a named step and a German reason, never ``fehler``: nothing went wrong, the
wall did its job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class BoundaryResult:
    ok: bool
    resolved: str
    step: str = ""
    reason: str = ""

    @property
    def status(self) -> str:
        return "ok" if self.ok else "abgelehnt"


def resolve_path(raw: str) -> Path:
    """Resolve the way the file system will: ``~``, relative (against FILES_BASE_DIR), ``..``
    and every symlink on the way. Never raises for a symlink loop (realpath stops there)."""
    text = raw.strip().strip("\"'")
    expanded = Path(os.path.expanduser(text))
    if not expanded.is_absolute():
        expanded = Path(settings.FILES_BASE_DIR) / expanded
    return Path(os.path.realpath(expanded))


def boundary_dirs() -> list[Path]:
    # The boundary is resolved too: a boundary entry that is itself a link means its target.
    return [Path(os.path.realpath(os.path.expanduser(d))) for d in settings.FILES_BOUNDARY]


def is_inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def check(raw: str) -> BoundaryResult:
    """Resolve ``raw`` first, then check the resolved path against the boundary."""
    if not raw or not raw.strip() or "\x00" in raw:
        return BoundaryResult(False, "", "kein_pfad", "Ich habe keinen Pfad erkannt.")
    resolved = resolve_path(raw)
    shown = str(resolved)
    bounds = boundary_dirs()
    if not bounds:
        return BoundaryResult(
            False,
            shown,
            "kein_aussenrand",
            "Es ist kein Außenrand konfiguriert (NOVABERG_FILES_BOUNDARY ist leer), "
            "deshalb kann ich kein Verzeichnis freigeben.",
        )
    if not any(is_inside(resolved, base) for base in bounds):
        allowed = ", ".join(str(b) for b in bounds)
        return BoundaryResult(
            False,
            shown,
            "ausserhalb_aussenrand",
            f"{shown} liegt außerhalb des Außenrands ({allowed}); dort kann ich nichts freigeben.",
        )
    if not resolved.exists():
        return BoundaryResult(
            False, shown, "nicht_gefunden", f"Das Verzeichnis {shown} gibt es nicht."
        )
    if not resolved.is_dir():
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
