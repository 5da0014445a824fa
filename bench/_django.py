"""Django set-up for benchmarks: a database of their own (``novaberg_bench``), migrated, so a
benchmark never fills the app's database or races the test suite's.

Run directly (not under ``make bench``), a benchmark may have to start the embedded PostgreSQL
(and Redis, when it asks for it); what it started it stops again when it ends, also on SIGTERM
or Ctrl-C, so no server is left running that nobody will stop. Servers it found running (a
``make run``, ``make bench``'s own) are left alone.

Every result carries where it was measured: commit (``+dirty`` when the tree has changes
beyond the benchmark outputs), date and machine (``provenance``).
"""

from __future__ import annotations

import atexit
import datetime as dt
import os
import platform
import re
import signal
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent
BENCH_DB = "novaberg_bench"
RESULTS_DIR = BASE_DIR / "bench" / "results"
# What the benchmarks themselves write: not a change of the code that was measured.
OUTPUT_PATHS = ("bench/results/", "README.md")

_started: list[str] = []


def setup(*, redis: bool = False) -> None:
    if str(BASE_DIR) not in sys.path:
        sys.path.insert(0, str(BASE_DIR))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")
    os.environ["NOVABERG_DATABASE_NAME"] = BENCH_DB
    os.environ.setdefault("NOVABERG_REDIS_DB", "9")
    os.environ.setdefault("NOVABERG_LOG_LEVEL", "WARNING")
    _ensure_services(redis=redis)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def _stop_started() -> None:
    from novaberg import embedded

    while _started:
        name = _started.pop()
        if name == "postgres":
            from django.db import connections

            connections.close_all()
            stopped = embedded.stop_postgres()
        else:
            stopped = embedded.stop_redis()
        print(f"[bench] {name} (eingebettet) {'gestoppt' if stopped else 'war schon fort'}")


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _ensure_services(*, redis: bool) -> None:
    """Find or start what the benchmark needs; register the stop of what was started here."""
    import psycopg

    from novaberg import embedded

    atexit.register(_stop_started)
    signal.signal(signal.SIGTERM, _on_signal)
    url = os.environ.get("DATABASE_URL", "").strip()
    if not url:
        state = embedded.ensure_postgres()  # creates BENCH_DB (NOVABERG_DATABASE_NAME) too
        if state.started_now:
            _started.append("postgres")
            print(f"[bench] PostgreSQL (eingebettet) gestartet in {embedded.pg_dir()}")
        url = state.url
    if redis and not os.environ.get("REDIS_URL", "").strip():
        rstate = embedded.ensure_redis()
        if rstate.started_now:
            _started.append("redis")
            shown = re.sub(r"//:[^@]*@", "//:***@", rstate.url)  # never print the password
            print(f"[bench] Redis (eingebettet) gestartet: {shown}")
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
    load = ""
    try:
        load = f", load {os.getloadavg()[0]:.1f}"
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores{load}, Python {platform.python_version()}"


@cache
def commit() -> str:
    """``git rev-parse --short HEAD``, with ``+dirty`` when tracked or untracked files other
    than the benchmark outputs differ from it; ``unbekannt`` outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain"],
            cwd=BASE_DIR,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unbekannt"
    changed = [
        line[3:].strip()
        for line in status.splitlines()
        if line[3:].strip() and not line[3:].strip().startswith(OUTPUT_PATHS)
    ]
    return head + ("+dirty" if changed else "")


def provenance() -> str:
    now = dt.datetime.now(dt.UTC)
    return f"Commit `{commit()}`, {now:%Y-%m-%d %H:%M} UTC, {machine()}."


def write_result(name: str, markdown: str) -> None:
    """Keep the latest table of a benchmark in bench/results/NAME.md (the README quotes it),
    with the provenance line under its heading. Written only by a benchmark that got to the
    end: a failed one raises before and leaves the previous table in place."""
    lines = markdown.strip().splitlines()
    head = 1 if lines and lines[0].startswith("#") else 0
    body = [*lines[:head], "", provenance(), "", *lines[head:]]
    text = "\n".join(body).replace("\n\n\n", "\n\n").strip() + "\n"
    out = RESULTS_DIR / f"{name}.md"
    tmp = out.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(out)
    print(text)
