"""Django set-up for benchmarks: a database of their own (``novaberg_bench``), migrated, so a
benchmark never fills the app's database or races the test suite's.

Run directly (not under ``make bench``), a benchmark may have to start the embedded PostgreSQL
(and Redis, when it asks for it); what it started it stops again when it ends, also on SIGTERM
or Ctrl-C, so no server is left running that nobody will stop — unless another benchmark run
directly beside it still holds a lease on it; then the last one to leave stops it. Servers it
found running without a benchmark's marker (``make run``, ``make bench``'s own) are left alone.

Every result carries where it was measured: commit (``+dirty`` when the tree has changes
beyond the benchmark outputs), date and machine (``provenance``).
"""

from __future__ import annotations

import atexit
import datetime as dt
import fcntl
import os
import platform
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import FrameType
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
BENCH_DB = "novaberg_bench"
RESULTS_DIR = BASE_DIR / "bench" / "results"
# What the benchmarks themselves write: not a change of the code that was measured.
OUTPUT_PATHS = ("bench/results/", "README.md")

_leased = False
_server_url = ""


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


# Leases: a server a benchmark started is the benchmarks' to stop, but not while another
# benchmark run directly beside it still uses it. Each benchmark process holds a lease file
# (its PID); a marker names each server a benchmark started; the last lease holder to leave
# stops the marked servers. Servers started by anyone else (make run, make bench) carry no
# marker and are never stopped here.


def _lease_dir() -> Path:
    from novaberg import embedded

    folder = embedded.ensure_data_dir() / "bench-leases"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def _leases_locked() -> Iterator[Path]:
    folder = _lease_dir()
    with open(folder / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield folder
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _live_leases(folder: Path) -> list[int]:
    live = []
    for lease in folder.glob("[0-9]*"):
        pid = int(lease.name)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            lease.unlink(missing_ok=True)  # a benchmark killed hard: its lease goes
            continue
        except PermissionError:
            pass
        live.append(pid)
    return live


def _release() -> None:
    from novaberg import embedded

    global _leased
    if not _leased:
        return
    _leased = False
    with _leases_locked() as folder:
        (folder / str(os.getpid())).unlink(missing_ok=True)
        if _live_leases(folder):
            return
        for name in ("redis", "postgres"):
            marker = folder / f"{name}.started"
            if not marker.exists():
                continue
            if name == "postgres":
                from django.db import connections

                connections.close_all()
                stopped = embedded.stop_postgres()
            else:
                stopped = embedded.stop_redis()
            marker.unlink(missing_ok=True)
            print(f"[bench] {name} (eingebettet) {'gestoppt' if stopped else 'war schon fort'}")


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def _ensure_services(*, redis: bool) -> None:
    """Find or start what the benchmark needs, under a lease (see above)."""
    from novaberg import embedded

    global _leased, _server_url
    atexit.register(_release)
    signal.signal(signal.SIGTERM, _on_signal)
    url = os.environ.get("DATABASE_URL", "").strip()
    with _leases_locked() as folder:
        (folder / str(os.getpid())).write_text(" ".join(sys.argv))
        _leased = True
        if not url:
            state = embedded.ensure_postgres()  # creates BENCH_DB (NOVABERG_DATABASE_NAME) too
            if state.started_now:
                (folder / "postgres.started").write_text(str(os.getpid()))
                print(f"[bench] PostgreSQL (eingebettet) gestartet in {embedded.pg_dir()}")
            url = state.url
        if redis and not os.environ.get("REDIS_URL", "").strip():
            rstate = embedded.ensure_redis()
            if rstate.started_now:
                (folder / "redis.started").write_text(str(os.getpid()))
                shown = re.sub(r"//:[^@]*@", "//:***@", rstate.url)  # never print the password
                print(f"[bench] Redis (eingebettet) gestartet: {shown}")
    _server_url = url
    ensure_database(BENCH_DB)


def ensure_database(name: str) -> None:
    """Create the database ``name`` on the benchmarks' server unless it exists."""
    import dj_database_url
    import psycopg

    params = dj_database_url.parse(server_url())
    conninfo: dict[str, Any] = {
        "dbname": "postgres",
        "user": params.get("USER") or "postgres",
        "password": params.get("PASSWORD") or None,
        # The embedded server has no TCP: its socket folder comes as ?host=… (OPTIONS).
        "host": params.get("HOST") or (params.get("OPTIONS") or {}).get("host") or None,
        "port": params.get("PORT") or None,
    }
    kwargs = {k: v for k, v in conninfo.items() if v}
    with psycopg.connect(autocommit=True, **kwargs) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def server_url() -> str:
    """The URL of the PostgreSQL server the benchmarks use (``DATABASE_URL`` or the embedded
    one ``setup`` found or started); the database is chosen by ``NOVABERG_DATABASE_NAME``."""
    assert _server_url, "setup() first"
    return _server_url


def settle(*, below: float = 1.0, max_wait_s: float = 150.0) -> float:
    """Wait until the 1-minute load average is below ``below`` (a benchmark before this one
    leaves it high for a minute or two), at most ``max_wait_s``; returns the load then. For a
    figure that is only judged on a quiet machine."""
    deadline = time.monotonic() + max_wait_s
    load = os.getloadavg()[0]
    if load >= below:
        print(f"[bench] waiting for a quiet machine (load {load:.1f})", flush=True)
    while load >= below and time.monotonic() < deadline:
        time.sleep(5)
        load = os.getloadavg()[0]
    return load


def machine() -> str:
    """One line naming the machine, for the README's performance table."""
    cpu = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    # The widest vector units: what int8 inference (ONNX Runtime) and hashing run on. Two
    # machines of the same name can differ here, and int8 gains most with VNNI.
    simd = [
        label
        for label, flag in (("AVX2", "avx2"), ("AVX-512", "avx512f"), ("VNNI", "avx512_vnni"))
        if flag in flags
    ]
    if simd:
        cpu = f"{cpu} ({', '.join(simd)})"
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


def write_figures(name: str, figures: list[dict[str, Any]]) -> None:
    """The figures the scaling targets are judged by, machine-readable, for ``make bench``'s
    summary (bench/run.py): bench/results/NAME.figures.json, written beside NAME.md.

    Each figure is a dict with
      ``figure``  what was measured, in words (e.g. "unchanged rescan, fast path"),
      ``value``   the measured number (float), ``unit`` its unit ("files/s", "ms p50", "×"),
      ``limit``   the hardware limit or anchor measured IN THE SAME RUN (float, or None when the
                  target is absolute), ``limit_label`` what that limit is, in words,
      ``ratio``   value / limit as the target reads it (float, or None),
      ``target``  the target in words (e.g. "≥ 0.50 of the bare walk"),
      ``met``     whether the target holds in this run (bool, or None when it can't be judged here).
    Only measured values: a benchmark never writes a number it did not measure in this run.
    """
    import json

    required = {"figure", "value", "unit", "limit", "limit_label", "ratio", "target", "met"}
    for f in figures:
        missing = required - set(f)
        if missing:
            raise ValueError(f"figure {f.get('figure')!r} lacks {sorted(missing)}")
    payload = {"provenance": provenance(), "figures": figures}
    out = RESULTS_DIR / f"{name}.figures.json"
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n")
    tmp.replace(out)
