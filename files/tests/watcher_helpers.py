"""Helpers for the watcher tests: a boundary in a temp dir, roots, a tree fingerprint."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from files.models import FileRoot, IndexEntry
from files.watcher import scan


def write(base: Path, rel: str, text: str | bytes) -> Path:
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def small_corpus(base: Path) -> None:
    write(
        base,
        "tee.md",
        "# Tee\n\nGrüner Tee braucht 80 Grad Wasser.\n\n## Ziehzeit\nDrei Minuten.\n",
    )
    write(base, "notiz.txt", "Einkaufsliste\n\nMilch, Brot, Käse.\n")
    write(base, "code/app.py", "import os\n\n\ndef main():\n    return os.getcwd()\n")
    write(base, "archive/alt.md", "# Altes Konzept\n\nDas gilt nicht mehr.\n")


def make_root(user: Any, character: Any, path: Path, **kw: Any) -> FileRoot:
    return FileRoot.objects.create(
        user=user,
        character=character,
        path=str(path.resolve()),
        eigentum=kw.pop("eigentum", FileRoot.Eigentum.NUTZER),
        state=kw.pop("state", FileRoot.State.ACTIVE),
        **kw,
    )


def seed_completed_rows(root: FileRoot) -> int:
    """The rows a completed run leaves for every file the walk finds under ``root`` (real
    hash and fast-path key, no enrichment), so a test measures the rescan and not the first
    enrichment; returns how many."""
    rows = IndexEntry.objects.bulk_create(
        [
            IndexEntry(
                root=root,
                rel_path=item.rel_path,
                format=item.format,
                size=item.size,
                mtime_ns=item.mtime_ns,
                ctime_ns=item.ctime_ns,
                inode=item.inode,
                inhalt_hash=hashlib.sha256(Path(item.path).read_bytes()).hexdigest(),
            )
            for item in scan.walk(Path(root.path), max_bytes=10**6)
            if isinstance(item, scan.Found)
        ]
    )
    return len(rows)


def tree_fingerprint(base: Path) -> dict[str, tuple[str, int, int, int]]:
    """Every entry under ``base`` (hidden ones included): content hash, mtime, mode, size."""
    seen: dict[str, tuple[str, int, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            digest = ""
            if os.path.isfile(full) and not os.path.islink(full):
                digest = hashlib.sha256(Path(full).read_bytes()).hexdigest()
            seen[os.path.relpath(full, base)] = (digest, st.st_mtime_ns, st.st_mode, st.st_size)
    return seen


def index_snapshot(root: FileRoot) -> list[tuple[Any, ...]]:
    """What a clean run must equal: content-derived columns of every row, in path order."""
    rows = []
    for e in IndexEntry.objects.filter(root=root).order_by("rel_path"):
        rows.append(
            (
                e.rel_path,
                e.inhalt_hash,
                e.state,
                e.archived,
                e.topic,
                e.summary,
                tuple(e.keywords),
                repr(e.block_map),
                e.topic_embedding is not None,
                e.blocks.count(),
            )
        )
    return rows
