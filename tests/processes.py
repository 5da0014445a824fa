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


class Stack:
    """A deployment of more than one machine on one host: daphne instances, Celery workers and
    one beat against the same PostgreSQL and Redis database, plus a Celery client on their
    broker (the multi-instance test and bench/bench_multi.py).

    ``redis_url`` is the broker of the stack (a Redis database no other worker reads, so no
    stray worker takes its tasks); ``env`` the children's environment (``process_env``).
    Every child logs to ``tmp``; ``stop()`` ends them all, also after a failed start."""

    def __init__(
        self, tmp: Path, *, redis_url: str, env: dict[str, str], start_timeout_s: float
    ) -> None:
        from celery import Celery

        self.tmp = tmp
        self.env = env
        self.start_timeout_s = start_timeout_s
        # Not the current app: the project's shared tasks would follow it and every later task
        # sent in this process would go to this stack's Redis database.
        self.app = Celery("multi", broker=redis_url, backend=redis_url, set_as_current=False)
        self.app.conf.broker_connection_retry_on_startup = True
        self.web: list[tuple[int, subprocess.Popen[bytes]]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.worker_logs: dict[str, Path] = {}
        self.beat: subprocess.Popen[bytes] | None = None

    def start_web(self) -> int:
        port = free_port()
        proc = start(
            ["daphne", "-b", "127.0.0.1", "-p", str(port), "novaberg.asgi:application"],
            log_path=self.tmp / f"daphne-{port}.log",
            ready=listening(port),
            env=self.env,
            timeout_s=self.start_timeout_s,
        )
        self.web.append((port, proc))
        # One /healthz call loads the embedding model, so no chat turn waits for it.
        try:
            urllib.request.urlopen(
                f"http://127.0.0.1:{port}/healthz", timeout=self.start_timeout_s
            ).close()
        except urllib.error.HTTPError:
            pass  # 503 names a service still starting; the model is loaded all the same
        return port

    def start_worker(self, label: str) -> str:
        name = f"{label}-{os.getpid()}@{socket.gethostname()}"
        log_path = self.tmp / f"worker-{label}.log"
        self.worker_logs[name] = log_path
        # Solo pool: the task runs in the worker process itself, so SIGKILL hits the run.
        self.workers[name] = start(
            ["celery", "-A", "novaberg", "worker", "-P", "solo", "-l", "INFO", "-n", name,
             "--without-gossip", "--without-mingle"],
            log_path=log_path,
            ready=lambda: bool(self.app.control.ping(destination=[name], timeout=0.5)),
            env=self.env,
            timeout_s=self.start_timeout_s,
        )  # fmt: skip
        return name

    def start_beat(self) -> None:
        log_path = self.tmp / "beat.log"
        self.beat = start(
            ["celery", "-A", "novaberg", "beat", "-l", "INFO", "-s", str(self.tmp / "beat")],
            log_path=log_path,
            ready=lambda: (
                log_path.exists() and "beat: Starting" in log_path.read_text(errors="replace")
            ),
            env=self.env,
            timeout_s=self.start_timeout_s,
        )

    def start_all(self, *, web: int, workers: list[str]) -> tuple[list[int], list[str]]:
        """``web`` daphnes, one worker per label and beat, started side by side (each child
        waits mostly on its own imports and model load); returns the ports and worker names."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=web + len(workers) + 1) as pool:
            ports = [pool.submit(self.start_web) for _ in range(web)]
            names = [pool.submit(self.start_worker, label) for label in workers]
            pool.submit(self.start_beat).result()
            return [f.result() for f in ports], [f.result() for f in names]

    def worker_of_task(self, task_id: str) -> list[str]:
        """The workers whose log shows they received task ``task_id`` (Celery logs each
        received task with its id at INFO)."""
        needle = f"[{task_id}] received"
        return [
            name
            for name, path in self.worker_logs.items()
            if path.exists() and needle in path.read_text(errors="replace")
        ]

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in self.tmp.glob("*.log")
        )

    def stop(self) -> None:
        for proc in [*self.workers.values(), *(p for _, p in self.web)]:
            if proc.poll() is None:
                proc.terminate()
        if self.beat is not None and self.beat.poll() is None:
            self.beat.terminate()
        for proc in [*self.workers.values(), *(p for _, p in self.web)]:
            stop(proc)
        if self.beat is not None:
            stop(self.beat)
