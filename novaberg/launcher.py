"""``make run`` and ``make test``: all set-up on a fresh machine, then the processes.

    python -m novaberg.launcher run    # services, migrate, demo login, daphne + worker + beat
    python -m novaberg.launcher test   # services, ruff, pytest against the real services
    python -m novaberg.launcher stop   # stop the embedded PostgreSQL and Redis

Embedded services are started only when DATABASE_URL / REDIS_URL are not set, and stopped again
at the end only by the launcher that started them (a ``make test`` beside a running ``make run``
leaves the running servers alone).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from novaberg import embedded

BASE_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEMO_USER = "demo"


def say(message: str) -> None:
    print(f"novaberg: {message}", flush=True)


def fail(message: str, code: int = 2) -> None:
    print(f"novaberg: FEHLER: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def start_services() -> list[str]:
    """Start what is embedded and not running; returns the names started by this call."""
    started: list[str] = []
    try:
        if not os.environ.get("DATABASE_URL", "").strip():
            state = embedded.ensure_postgres()
            verb = "gestartet" if state.started_now else "läuft"
            say(f"PostgreSQL (eingebettet, pgvector) {verb} in {embedded.data_dir() / 'pg'}")
            if state.started_now:
                started.append("postgres")
        if not os.environ.get("REDIS_URL", "").strip():
            state = embedded.ensure_redis()
            say(f"Redis (eingebettet) {'gestartet' if state.started_now else 'läuft'}: {state.url}")
            if state.started_now:
                started.append("redis")
    except embedded.ServiceError as exc:
        stop_services(started)
        fail(str(exc))
    return started


def stop_services(names: list[str]) -> None:
    if "postgres" in names and embedded.stop_postgres():
        say("PostgreSQL gestoppt")
    if "redis" in names and embedded.stop_redis():
        say("Redis gestoppt")


def manage(*args: str, env: dict[str, str] | None = None) -> None:
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=BASE_DIR, env=env, check=False)
    if result.returncode != 0:
        raise SystemExit(result.returncode)


def check_database() -> None:
    """One clear line when DATABASE_URL points at nothing (not a traceback)."""
    code = (
        "import django, os;os.environ.setdefault('DJANGO_SETTINGS_MODULE','novaberg.settings');"
        "django.setup();from django.db import connection;connection.ensure_connection()"
    )
    result = subprocess.run(
        [PYTHON, "-c", code], cwd=BASE_DIR, capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["?"])[-1]
        fail(
            f"Datenbank nicht erreichbar ({last[:200]}). Fix: DATABASE_URL prüfen, oder "
            "DATABASE_URL leer lassen für die eingebettete Datenbank."
        )


def demo_password() -> str:
    given = os.environ.get("NOVABERG_DEMO_PASSWORD", "").strip()
    if given:
        return given
    path = embedded.data_dir() / "demo_password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(9))
        path.chmod(0o600)
    return path.read_text().strip()


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run() -> None:
    port_raw = os.environ.get("NOVABERG_PORT", "8000").strip() or "8000"
    if not port_raw.isdigit():
        fail(f"NOVABERG_PORT ist keine Portnummer: {port_raw!r}")
    port = int(port_raw)
    if not port_free(port):
        fail(
            f"Port {port} ist schon belegt. Fix: NOVABERG_PORT=8010 make run (freien Port wählen)."
        )
    started = start_services()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        check_database()
        manage("migrate", "--no-input", "-v", "0")
        manage("collectstatic", "--no-input", "-v", "0")
        password = demo_password()
        manage("ensure_user", DEMO_USER, "--password", password, "--superuser")
        bind = os.environ.get("NOVABERG_BIND", "127.0.0.1")
        commands = {
            "daphne": ["-m", "daphne", "-b", bind, "-p", str(port), "novaberg.asgi:application"],
            "worker": [
                "-m",
                "celery",
                "-A",
                "novaberg",
                "worker",
                "-l",
                "INFO",
                "--concurrency",
                "2",
                "-n",
                f"novaberg-{os.getpid()}@%h",
            ],
            "beat": ["-m", "celery", "-A", "novaberg", "beat", "-l", "INFO"],
        }
        for _name, args in commands.items():
            # Own process group each, so Ctrl-C reaches them through us, in order.
            procs.append(subprocess.Popen([PYTHON, *args], cwd=BASE_DIR, start_new_session=True))
        url = f"http://{'127.0.0.1' if bind in {'0.0.0.0', '::'} else bind}:{port}/"
        say(f"Nova läuft: {url}  (Login: {DEMO_USER} / {password})  – Ctrl-C beendet alles.")
        _wait(procs)
    except KeyboardInterrupt:
        say("Ctrl-C: beende daphne, Worker und Beat …")
    finally:
        _terminate(procs)
        stop_services(started)


def _wait(procs: list[subprocess.Popen[bytes]]) -> None:
    def _sigterm(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _sigterm)
    # Also when started with SIGINT ignored (nohup, a shell's background job): Ctrl-C and
    # `kill -INT` must still stop everything cleanly.
    signal.signal(signal.SIGINT, _sigterm)
    while True:
        for proc in procs:
            if proc.poll() is not None:
                fail(f"Prozess {' '.join(map(str, proc.args[1:3]))} endete mit {proc.returncode}")
        time.sleep(0.5)


def _terminate(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    for proc in procs:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def ensure_browser() -> None:
    """The browser tests drive Debian's chromium; install it when missing and we are root."""
    if Path("/usr/bin/chromium").exists():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        say("chromium fehlt und ist hier nicht installierbar: Browser-Tests werden übersprungen.")
        return
    say("Installiere chromium für die Browser-Tests (apt-get) …")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update"], check=False, env=env)
    subprocess.run(["apt-get", "install", "-y", "chromium"], check=False, env=env)


def test(pytest_args: list[str]) -> None:
    # Tests use Redis database 1, so a running `make run` worker never takes a test's task.
    os.environ.setdefault("NOVABERG_REDIS_DB", "1")
    ensure_browser()
    started = start_services()
    code = 1
    try:
        check_database()
        ruff = [PYTHON, "-m", "ruff"]
        for args in (["check", "."], ["format", "--check", "."]):
            result = subprocess.run([*ruff, *args], cwd=BASE_DIR, check=False)
            if result.returncode != 0:
                fail(f"ruff {' '.join(args)} meldet Fehler (siehe oben)", code=result.returncode)
        # Type check after ruff (configuration: [tool.mypy] in pyproject.toml).
        result = subprocess.run([PYTHON, "-m", "mypy"], cwd=BASE_DIR, check=False)
        if result.returncode != 0:
            fail("mypy meldet Fehler (siehe oben)", code=result.returncode)
        result = subprocess.run([PYTHON, "-m", "pytest", *pytest_args], cwd=BASE_DIR, check=False)
        code = result.returncode
    finally:
        stop_services(started)
    raise SystemExit(code)


def main(argv: list[str]) -> None:
    if not argv:
        fail("Aufruf: python -m novaberg.launcher run|test|stop")
    command, rest = argv[0], argv[1:]
    if command == "run":
        run()
    elif command == "test":
        test(rest)
    elif command == "stop":
        stop_services(["postgres", "redis"])
    elif command == "services":
        start_services()
    else:
        fail(f"unbekannter Befehl {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
