from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from novaberg import embedded


class Command(BaseCommand):
    help = "Show the embedded PostgreSQL and Redis (started ones are found again, not twice)."

    def handle(self, *args: Any, **options: Any) -> None:
        pg = embedded.postgres_state()
        rd = embedded.redis_state()
        self.stdout.write(f"postgres: {'läuft, pid ' + str(pg.pid) if pg else 'aus'}")
        self.stdout.write(f"redis:    {'läuft, pid ' + str(rd.pid) if rd else 'aus'}")
