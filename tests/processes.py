"""Real project processes for tests and benchmarks: daphne and Celery workers, started against
the database and Redis database of the calling process, waited for, and stopped again."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

BASE_DIR = Path(__file__).resolve().parent.parent


def log_dir() -> Path:
    """Logs of the processes a run starts: in the run's own data folder (two runs never write
    into each other's logs; a failed `make test` keeps them until the next run)."""
    return Path(settings.DATA_DIR) / "logs"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(**extra: str) -> dict[str, str]:
    """The environment of a child that must see the same data as this process: the (test)
    database by name and the same Redis database (broker and channel layer)."""
    env = dict(os.environ)
    env["DJANGO_SETTINGS_MODULE"] = "novaberg.settings"
    env["NOVABERG_DATABASE_NAME"] = str(settings.DATABASES["default"]["NAME"])
    env["NOVABERG_REDIS_DB"] = settings.REDIS_URL.rsplit("/", 1)[1]
    env.update(extra)
    return env


def start(
    args: list[str],
    *,
    log_path: Path,
    ready: Callable[[], bool],
    env: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> subprocess.Popen[bytes]:
    """Start ``python -m args…`` in the project folder; return once ``ready()`` holds.

    The child's output goes to ``log_path``; a child that exits or never gets ready raises
    with the log's path, so a failing start is readable instead of a hang."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", *args],
            cwd=BASE_DIR,
            env=env if env is not None else process_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{args[0]} exited with {proc.returncode}; see {log_path}")
        if ready():
            return proc
        time.sleep(0.2)
    stop(proc)
    raise RuntimeError(f"{args[0]} was not ready within {timeout_s:.0f} s; see {log_path}")


def stop(proc: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def listening(port: int) -> Callable[[], bool]:
    def check() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        except OSError:
            return False
        return True

    return check


# Importing torch and sentence-transformers alone takes ~50 s on these 2 cores while other
# test runs compete for them: a start is given this long before it counts as failed.
DAPHNE_START_S = 180.0


def start_daphne(
    port: int, *, log_path: Path, application: str = "novaberg.asgi:application", **env: str
) -> subprocess.Popen[bytes]:
    """Daphne, listening, with the embedding model loaded: one /healthz call is its first use
    (as `make run` does), so no measured or tested turn pays for the load."""
    proc = start(
        ["daphne", "-b", "127.0.0.1", "-p", str(port), application],
        log_path=log_path,
        ready=listening(port),
        env=process_env(**env),
        timeout_s=DAPHNE_START_S,
    )
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=120).close()
    except urllib.error.HTTPError:
        pass  # 503 names a service still starting; the model is loaded all the same
    return proc


@contextmanager
def offline_daphne(log_name: str) -> Iterator[str]:
    """Daphne in Offline-Modus for a browser test; yields its base URL and stops it after."""
    port = free_port()
    proc = start_daphne(
        port, log_path=log_dir() / log_name, NOVABERG_LLM_BASE_URL="", NOVABERG_LOG_LEVEL="WARNING"
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
