from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from novaberg import embedded


class Command(BaseCommand):
    help = "Show the embedded PostgreSQL and Redis of the data folder (this command starts none)."
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        pg = embedded.postgres_state(settings.DATA_DIR)
        rd = embedded.redis_state(settings.DATA_DIR, ping=True)
        self.stdout.write(f"postgres: {'läuft, pid ' + str(pg.pid) if pg else 'aus'}")
        self.stdout.write(f"redis:    {'läuft, pid ' + str(rd.pid) if rd else 'aus'}")
        if not (pg and rd):
            self.stdout.write(
                "Starten: `make run` (Ctrl-C beendet alles) oder "
                "`python -m novaberg.launcher services` (beenden: `make stop`)."
            )
