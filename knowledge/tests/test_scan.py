"""The zone scan: a knowledge file changed, added or removed by hand is noticed, and the
library rows follow the files (issue 14, "A file changed or removed by hand in the zone")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from conversation.models import Character
from knowledge.apps import ZONE_SCAN_BEAT_ENTRY
from knowledge.models import KnowledgeEntry
from knowledge.scan import pairs_to_scan, zone_scan
from knowledge.selectors import library_search
from knowledge.tasks import zone_scan_task


def test_a_hand_edit_a_new_file_and_a_removal_are_noticed(
    corpus: dict[str, Any], folder: Path, user: Any, nova: Character
) -> None:
    tee = folder / "tee.md"
    tee.write_text(
        tee.read_text().replace("Version: 1.0", "Version: 1.3").replace("80 Grad", "75 Grad")
    )
    (folder / "harz.md").unlink()
    (folder / "unterwegs").mkdir()
    (folder / "unterwegs" / "rad.md").write_text(
        "# Radtouren\n\nVersion: 1.0\n\n## AKTUELL\n\nDie Elberadweg-Etappe nach Meißen.\n"
    )
    (folder / ".versteckt.md").write_text("# Geheim\n")

    report = zone_scan(user=user, character=nova)
    assert sorted(report.followed) == ["tee.md", "unterwegs/rad.md"]
    assert report.removed == ["harz.md"] and report.errors == []
    assert report.unchanged == 2  # kennlinie.md, sauerteig.md: read, not re-embedded
    rows = dict(
        KnowledgeEntry.objects.filter(user=user, character=nova).values_list("path", "version")
    )
    assert rows == {
        "kennlinie.md": "1.0",
        "sauerteig.md": "1.0",
        "tee.md": "1.3",
        "unterwegs/rad.md": "1.0",
    }
    found = library_search(user=user, character=nova, vector=None, text="Elberadweg Radtouren")
    assert [h.path for h in found.hits] == ["unterwegs/rad.md"]

    again = zone_scan(user=user, character=nova)  # idempotent: nothing left to follow
    assert (again.followed, again.removed, again.unchanged) == ([], [], 4)


def test_the_scan_task_runs_for_one_pair_and_beat_knows_it(
    corpus: dict[str, Any], folder: Path, user: Any, other_user: Any, nova: Character
) -> None:
    assert settings.CELERY_BEAT_SCHEDULE[ZONE_SCAN_BEAT_ENTRY]["task"] == (
        "knowledge.tasks.zone_scan_all"
    )
    assert (user.pk, nova.pk) in pairs_to_scan()
    (folder / "kennlinie.md").unlink()
    result = zone_scan_task.apply(args=(user.pk, nova.pk)).get()
    assert result is not None and result["removed"] == ["kennlinie.md"]
    assert not KnowledgeEntry.objects.filter(path="kennlinie.md").exists()
    # Another pair's scan does not touch her rows.
    zone_scan_task.apply(args=(other_user.pk, nova.pk)).get()
    assert KnowledgeEntry.objects.filter(user=user).count() == 3
