"""The zone scan: a knowledge file changed or removed by hand is noticed ("A file
changed or removed by hand in the zone is noticed by the watcher").

Per pair: every Markdown file of the pair's folder (hidden entries and links skipped, like every
read of the zone) is hashed; a file whose hash differs from its row, or that has no row, is
followed under the file's lock (``settle_file``: open intents settled first, then the row made
to follow the bytes on disk and read back); a row whose file is gone is removed. Unchanged files
cost one read and no embedding. Idempotent; safe to kill (each file is one locked step).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conversation.models import Character
from knowledge import conf
from knowledge.fileio import TooLarge, read_bytes, sha256
from knowledge.models import KnowledgeEntry
from knowledge.tools import settle_file
from knowledge.tools.read import _zone_files
from knowledge.zone import pair_dir, schreibziel_pruefen

if TYPE_CHECKING:
    from django.contrib.auth.models import User

logger = logging.getLogger(__name__)
_PAIR_FOLDER = re.compile(r"^(\d+)-(\d+)$")


@dataclass
class ScanReport:
    user_id: int
    character_id: int
    unchanged: int = 0
    followed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "character_id": self.character_id,
            "unchanged": self.unchanged,
            "followed": self.followed,
            "removed": self.removed,
            "errors": self.errors,
        }


def zone_scan(*, user: User, character: Character) -> ScanReport:
    """Bring the pair's library rows in line with the files in the pair's zone folder."""
    report = ScanReport(user_id=user.pk, character_id=character.pk)
    folder = pair_dir(user=user, character=character)
    rows = {
        path: digest
        for path, digest in KnowledgeEntry.objects.filter(
            user=user, character=character
        ).values_list("path", "inhalt_hash")
    }
    on_disk = _zone_files(folder) if folder.is_dir() else []
    for rel in on_disk:
        target = schreibziel_pruefen(rel, user=user, character=character)
        if not target.ok or target.resolved is None:
            report.errors.append({"path": rel, "step": str(target.step)})
            continue
        try:
            raw = read_bytes(target.resolved)
        except (OSError, TooLarge) as exc:
            report.errors.append({"path": rel, "step": "nicht_lesbar", "detail": str(exc)[:200]})
            continue
        if raw is not None and rows.get(rel) == sha256(raw):
            report.unchanged += 1
            continue
        result = settle_file(user=user, character=character, path=rel)
        if result.ok:
            report.followed.append(rel)
        else:
            report.errors.append({"path": rel, "step": str(result.step)})
    present = set(on_disk)
    for rel in sorted(set(rows) - present):
        result = settle_file(user=user, character=character, path=rel)
        gone = not KnowledgeEntry.objects.filter(user=user, character=character, path=rel).exists()
        if not gone and not (folder / rel).exists():
            # The folder itself is gone (settle_file cannot lock inside it): the rows follow.
            KnowledgeEntry.objects.filter(user=user, character=character, path=rel).delete()
            gone = True
        if gone:
            report.removed.append(rel)
        else:
            report.errors.append({"path": rel, "step": str(result.step)})
    if report.followed or report.removed or report.errors:
        logger.info("knowledge zone scan %s", report.as_json())
    return report


def pairs_to_scan() -> list[tuple[int, int]]:
    """Every pair with library rows or a folder in the zone (a system job, like beat's watcher
    run: it reads every pair, and each pair's scan is scoped to that pair)."""
    pairs = set(KnowledgeEntry.objects.values_list("user_id", "character_id").distinct())
    base = conf.knowledge_dir()
    if base.is_dir():
        for child in base.iterdir():
            match = _PAIR_FOLDER.match(child.name)
            if match and child.is_dir() and not child.is_symlink():
                pairs.add((int(match.group(1)), int(match.group(2))))
    return sorted(pairs)


def zone_scan_pair(*, user_id: int, character_id: int) -> ScanReport | None:
    from django.contrib.auth.models import User

    user = User.objects.filter(pk=user_id).first()
    character = Character.objects.filter(pk=character_id).first()
    if user is None or character is None:
        return None
    return zone_scan(user=user, character=character)
