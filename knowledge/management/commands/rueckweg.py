"""``python manage.py rueckweg``: one return-path run over pending promoted memories, one line
per memory with its outcome (DESIGN.md "Interfaces")."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from knowledge.rueckweg import rueckweg_for_memory, rueckweg_pending


class Command(BaseCommand):
    help = "Trägt bewährte Erinnerungen (Langzeitgedächtnis) in Novas Wissensdateien ein."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--memory", type=int, action="append", help="nur diese Eintrags-ID")
        parser.add_argument("--limit", type=int, default=None, help="höchstens so viele")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["memory"]:
            results = [rueckweg_for_memory(memory_entry_id=pk) for pk in options["memory"]]
        else:
            results = rueckweg_pending(limit=options["limit"])
        if not results:
            self.stdout.write("Keine offenen Einträge für den Rückweg.")
        for result in results:
            self.stdout.write(result.line())
