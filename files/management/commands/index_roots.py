"""``python manage.py index_roots``: one watcher run over every active root, with a terminal
progress bar per root."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from files.models import FileRoot
from files.watcher import index_root_run

BAR_WIDTH = 30


class Command(BaseCommand):
    help = "Eine Runde des Wächters über alle aktiven Ordner (mit Fortschrittsbalken)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--root", type=int, action="append", help="nur diese Wurzel-ID(s)")
        parser.add_argument(
            "--full-hash", action="store_true", help="jede Datei hashen (kein schneller Weg)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        roots = FileRoot.objects.filter(state=FileRoot.State.ACTIVE).order_by("pk")
        if options.get("root"):
            roots = roots.filter(pk__in=options["root"])
        if not roots.exists():
            self.stdout.write("Kein freigegebener Ordner ist aktiv.")
            return
        for root in roots:
            self.stdout.write(f"{root.path}")

            def bar(done: int, total: int) -> None:
                filled = BAR_WIDTH if total == 0 else int(BAR_WIDTH * done / total)
                line = f"\r  [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done}/{total}"
                self.stdout.write(line, ending="")
                sys.stdout.flush()

            report = index_root_run(
                root_id=root.pk, full_hash=True if options["full_hash"] else None, on_progress=bar
            )
            self.stdout.write("")
            c = report.counts
            run = f"Lauf {report.run_id}: " if report.run_id is not None else ""
            if report.outcome != "fertig":
                self.stdout.write(f"  {run}{report.outcome}")
                continue
            skipped = ", ".join(f"{k} {v}" for k, v in c["skipped"].items()) or "keine"
            self.stdout.write(
                f"  {run}neu {c['new']}, geändert {c['changed']}, unverändert {c['unchanged']}, "
                f"fort {c['gone']}, übersprungen: {skipped}, Fehler {c['errors']}"
            )
