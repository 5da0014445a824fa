"""Django set-up for benchmarks: a database of their own (``novaberg_bench``), migrated, so a
benchmark never fills the app's database or races the test suite's."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
BENCH_DB = "novaberg_bench"


def setup() -> None:
    if str(BASE_DIR) not in sys.path:
        sys.path.insert(0, str(BASE_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")
    os.environ["NOVABERG_DATABASE_NAME"] = BENCH_DB
    os.environ.setdefault("NOVABERG_REDIS_DB", "9")
    os.environ.setdefault("NOVABERG_LOG_LEVEL", "WARNING")
    _ensure_database()
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _ensure_database() -> None:
    import psycopg

    from novaberg import embedded

    url = os.environ.get("DATABASE_URL", "").strip() or embedded.ensure_postgres().url
    import dj_database_url

    params = dj_database_url.parse(url)
    conninfo = {
        "dbname": "postgres",
        "user": params.get("USER") or "postgres",
        "password": params.get("PASSWORD") or None,
        # The embedded server has no TCP: its socket folder comes as ?host=… (OPTIONS).
        "host": params.get("HOST") or (params.get("OPTIONS") or {}).get("host") or None,
        "port": params.get("PORT") or None,
    }
    with psycopg.connect(**{k: v for k, v in conninfo.items() if v}, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def machine() -> str:
    """One line naming the machine, for the README's performance table."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def write_result(name: str, markdown: str) -> None:
    """Keep the latest table of a benchmark in bench/results/NAME.md (the README quotes it)."""
    out = BASE_DIR / "bench" / "results" / f"{name}.md"
    out.write_text(markdown.rstrip() + "\n")
    print(markdown)
