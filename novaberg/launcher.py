"""``make run``, ``make test``, ``make bench``: all set-up on a fresh machine, then the processes.

    python -m novaberg.launcher run      # services, migrate, demo login, daphne + worker + beat
    python -m novaberg.launcher test     # ruff + mypy, then pytest against services of its own
    python -m novaberg.launcher lint     # ruff + mypy only
    python -m novaberg.launcher bench    # services, then the benchmarks (bench/run.py)
    python -m novaberg.launcher stop     # stop the embedded PostgreSQL and Redis of var/
    python -m novaberg.launcher services # start them and leave them running (until `stop`)

The launcher is the only place that starts services. Embedded ones are started only when
DATABASE_URL / REDIS_URL are not set; their URLs reach the children through the environment
(DATABASE_URL, REDIS_URL, NOVABERG_DATA_DIR), and each command stops at its end what it started.

A test run always has a data folder of its own (``var/test/run-<pid>/``): its own PostgreSQL
cluster and a Redis on a free port, so a ``make run`` beside it, another checkout, or a second
test run never share a port, a database or a queue with it.
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
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from novaberg import embedded

BASE_DIR = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
DEMO_USER = "demo"
CHROMIUM_DEFAULT = "/usr/bin/chromium"
READY_TIMEOUT_S = 180.0


def say(message: str) -> None:
    print(f"novaberg: {message}", flush=True)


def fail(message: str, code: int = 2) -> None:
    print(f"novaberg: FEHLER: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


# --- services -----------------------------------------------------------------------------------


def start_services(
    data: Path, started: list[str], *, any_free_port: bool = False
) -> dict[str, str]:
    """Start what is embedded and not running in ``data``; the names of those started are
    appended to ``started`` at once (the caller stops them, also after a Ctrl-C half-way).

    Returns the environment that hands the services to children (DATABASE_URL, REDIS_URL,
    NOVABERG_DATA_DIR)."""
    env = {"NOVABERG_DATA_DIR": str(data)}
    try:
        if not os.environ.get("DATABASE_URL", "").strip():
            state = embedded.ensure_postgres(data)
            verb = "gestartet" if state.started_now else "läuft"
            say(f"PostgreSQL (eingebettet, pgvector) {verb} in {embedded.pg_dir(data)}")
            if state.started_now:
                started.append("postgres")
            env["DATABASE_URL"] = state.url
        if not os.environ.get("REDIS_URL", "").strip():
            state = embedded.ensure_redis(data, any_free_port=any_free_port)
            say(f"Redis (eingebettet) {'gestartet' if state.started_now else 'läuft'}: {state.url}")
            if state.started_now:
                started.append("redis")
            env["REDIS_URL"] = state.url
    except embedded.ServiceError as exc:
        stop_services(started, data)
        fail(str(exc))
    return env


def stop_services(names: list[str], data: Path) -> None:
    if "postgres" in names and embedded.stop_postgres(data):
        say("PostgreSQL gestoppt")
    if "redis" in names and embedded.stop_redis(data):
        say("Redis gestoppt")


def ensure_secret_key(data: Path) -> None:
    """The session-signing key, generated once per data folder, 0600 from its first byte."""
    if os.environ.get("DJANGO_SECRET_KEY", "").strip():
        return
    embedded.write_secret(data / "secret_key", secrets.token_urlsafe(64))


def manage(*args: str, env: Mapping[str, str], stdin_text: str | None = None) -> None:
    result = subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=BASE_DIR,
        env=dict(env),
        input=stdin_text,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(result.returncode)


def check_database(env: Mapping[str, str]) -> None:
    """One clear line when DATABASE_URL points at nothing (not a traceback)."""
    code = (
        "import django, os;os.environ.setdefault('DJANGO_SETTINGS_MODULE','novaberg.settings');"
        "django.setup();from django.db import connection;connection.ensure_connection()"
    )
    result = subprocess.run(
        [PYTHON, "-c", code],
        cwd=BASE_DIR,
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["?"])[-1]
        fail(
            f"Datenbank nicht erreichbar ({last[:200]}). Fix: DATABASE_URL prüfen, oder "
            "DATABASE_URL leer lassen für die eingebettete Datenbank."
        )


# --- make run -----------------------------------------------------------------------------------


def new_demo_password() -> str:
    # Starts with a letter or digit: a password is data, but one that looks like an option is a
    # trap for every tool that takes it on a command line.
    while True:
        candidate = secrets.token_urlsafe(12)
        if candidate[0].isalnum():
            return candidate


def demo_password(data: Path) -> str:
    given = os.environ.get("NOVABERG_DEMO_PASSWORD", "").strip()
    if given:
        return given
    path = data / "demo_password"
    embedded.write_secret(path, new_demo_password())
    stored = path.read_text().strip()
    if len(stored) < 4:
        # An empty or truncated file (a crash mid-write in an old version): a new one.
        path.unlink()
        embedded.write_secret(path, new_demo_password())
        stored = path.read_text().strip()
    return stored


def ensure_demo_user(password: str, env: Mapping[str, str]) -> None:
    """The password goes through stdin: never parsed as an option (it may start with '-'), never
    on a command line that `ps` shows."""
    manage(
        "ensure_user", DEMO_USER, "--password-stdin", "--superuser", env=env, stdin_text=password
    )


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
    data = embedded.ensure_data_dir()
    ensure_secret_key(data)
    _install_stop_signals()
    started: list[str] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        env = {**os.environ, **start_services(data, started)}
        check_database(env)
        manage("migrate", "--no-input", "-v", "0", env=env)
        manage("collectstatic", "--no-input", "-v", "0", env=env)
        password = demo_password(data)
        ensure_demo_user(password, env)
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
            procs.append(
                subprocess.Popen([PYTHON, *args], cwd=BASE_DIR, env=env, start_new_session=True)
            )
        url = f"http://{'127.0.0.1' if bind in {'0.0.0.0', '::'} else bind}:{port}/"
        # /healthz loads the embedding model in daphne (its first use) before anyone chats.
        health = _wait_ready(url + "healthz", procs)
        say(f"Nova läuft: {url}  (Login: {DEMO_USER} / {password})  – Ctrl-C beendet alles.")
        if health:
            say(f"noch nicht bereit: {health}")
        _wait(procs)
    except KeyboardInterrupt:
        say("Ctrl-C: beende daphne, Worker und Beat …")
    finally:
        _terminate(procs)
        stop_services(started, data)


def _install_stop_signals() -> None:
    def _stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    # Also when started with SIGINT ignored (nohup, a shell's background job): Ctrl-C and
    # `kill -INT` must still stop everything cleanly.
    signal.signal(signal.SIGINT, _stop)


def _check_alive(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is not None:
            args = proc.args if isinstance(proc.args, list) else [proc.args]
            fail(f"Prozess {' '.join(map(str, args[1:3]))} endete mit {proc.returncode}")


def _wait_ready(url: str, procs: list[subprocess.Popen[bytes]]) -> str:
    """Poll /healthz until it answers 200; returns "" then, else what is still down."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "daphne antwortet nicht"
    while time.monotonic() < deadline:
        _check_alive(procs)
        try:
            with urllib.request.urlopen(url, timeout=30) as answer:
                if answer.status == 200:
                    return ""
        except urllib.error.HTTPError as exc:
            last = exc.read().decode(errors="replace")[:300]
        except OSError:
            pass  # daphne still starting
        time.sleep(0.5)
    return last


def _wait(procs: list[subprocess.Popen[bytes]]) -> None:
    while True:
        _check_alive(procs)
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


# --- browser ------------------------------------------------------------------------------------


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def chromium_path(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return env.get("NOVABERG_CHROMIUM", "").strip() or CHROMIUM_DEFAULT


def browser_required(env: Mapping[str, str] | None = None) -> bool:
    """Under CI (CI=true) and under `make test` (NOVABERG_REQUIRE_BROWSER=1) the browser test
    must run; only elsewhere may it be skipped."""
    env = os.environ if env is None else env
    return _truthy(env.get("CI")) or _truthy(env.get("NOVABERG_REQUIRE_BROWSER"))


def browser_verdict(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """("run", path), or ("skip" | "fail", the reason in one sentence)."""
    path = chromium_path(env)
    if Path(path).is_file() and os.access(path, os.X_OK):
        return "run", path
    reason = (
        f"Chromium fehlt: {path} ist nicht da (make test installiert es als root mit apt-get; "
        "NOVABERG_CHROMIUM nennt einen anderen Pfad)."
    )
    if browser_required(env):
        return "fail", (
            reason + " Unter CI=true und make test ist das ein Fehler, kein Überspringen "
            "(außerhalb von CI: NOVABERG_REQUIRE_BROWSER=0 überspringt den Browser-Test)."
        )
    return "skip", reason


def ensure_browser() -> None:
    """The browser test drives Debian's chromium; install it when missing and we are root."""
    verdict, reason = browser_verdict()
    if verdict == "run":
        return
    if chromium_path() == CHROMIUM_DEFAULT and os.geteuid() == 0 and shutil.which("apt-get"):
        say("Installiere chromium für den Browser-Test (apt-get) …")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-q"], check=False, env=env)
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=False, env=env)
        verdict, reason = browser_verdict()
        if verdict == "run":
            return
    say(reason)


# --- make test ----------------------------------------------------------------------------------


def _process_started(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except psutil.Error:
        return None


def _run_owner_alive(run_dir: Path) -> bool:
    try:
        pid_raw, started_raw = (run_dir / "owner").read_text().split()
        pid, started = int(pid_raw), float(started_raw)
    except (OSError, ValueError):
        return False
    now_started = _process_started(pid)
    # The same pid with another start time is a new process that reused the number.
    return now_started is not None and abs(now_started - started) < 1.0


def clean_stale_test_runs(data: Path) -> list[Path]:
    """Stop the servers of test runs whose launcher is gone (killed, crashed) and remove their
    folders; runs still going are left alone."""
    removed: list[Path] = []
    runs = data / "test"
    if not runs.is_dir():
        return removed
    for run_dir in sorted(runs.glob("run-*")):
        if not run_dir.is_dir() or _run_owner_alive(run_dir):
            continue
        embedded.stop_postgres(run_dir)
        embedded.stop_redis(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        removed.append(run_dir)
    return removed


def new_test_run_dir(data: Path) -> Path:
    clean_stale_test_runs(data)
    runs = data / "test"
    runs.mkdir(parents=True, exist_ok=True)
    run_dir = runs / f"run-{os.getpid()}"
    # Named run-* only once its owner file is in: a second run cleaning up at this moment never
    # takes a folder without an owner for a stale one.
    draft = runs / f".draft-{os.getpid()}"
    shutil.rmtree(draft, ignore_errors=True)
    draft.mkdir()
    (draft / "owner").write_text(f"{os.getpid()} {_process_started(os.getpid())}")
    draft.rename(run_dir)
    return run_dir


def start_test_services(run_dir: Path, started: list[str]) -> dict[str, str]:
    """A test run's own services: PostgreSQL in ``run_dir`` and Redis on a free port (never
    6390 or whatever NOVABERG_REDIS_PORT names: a `make run` may hold those)."""
    env = start_services(run_dir, started, any_free_port=True)
    if os.environ.get("REDIS_URL", "").strip():
        # An explicit Redis may serve an app too: the tests take another database on it.
        env["NOVABERG_REDIS_DB"] = os.environ.get("NOVABERG_REDIS_DB", "").strip() or "1"
    return env


def lint() -> None:
    """ruff, then mypy (configuration: [tool.mypy] in pyproject.toml); the first finding ends."""
    ruff = [PYTHON, "-m", "ruff"]
    for args in (["check", "."], ["format", "--check", "."]):
        result = subprocess.run([*ruff, *args], cwd=BASE_DIR, check=False)
        if result.returncode != 0:
            fail(f"ruff {' '.join(args)} meldet Fehler (siehe oben)", code=result.returncode)
    result = subprocess.run([PYTHON, "-m", "mypy"], cwd=BASE_DIR, check=False)
    if result.returncode != 0:
        fail("mypy meldet Fehler (siehe oben)", code=result.returncode)


def test(pytest_args: list[str]) -> None:
    # `make test` always lints; a subset run while working may skip it (NOVABERG_TEST_LINT=0).
    if os.environ.get("NOVABERG_TEST_LINT", "1").strip() != "0":
        lint()
    ensure_browser()
    run_dir = new_test_run_dir(embedded.ensure_data_dir())
    say(f"Testlauf in {run_dir}")
    code = 1
    started: list[str] = []
    try:
        ensure_secret_key(run_dir)
        env = {
            **os.environ,
            **start_test_services(run_dir, started),
            "NOVABERG_TEST_RUN": str(run_dir),
            "NOVABERG_REQUIRE_BROWSER": os.environ.get("NOVABERG_REQUIRE_BROWSER", "1"),
        }
        check_database(env)
        result = subprocess.run(
            [PYTHON, "-m", "pytest", *pytest_args], cwd=BASE_DIR, env=env, check=False
        )
        code = result.returncode
    except KeyboardInterrupt:
        code = 130
    finally:
        stop_services(started, run_dir)
        if code == 0:
            shutil.rmtree(run_dir, ignore_errors=True)
        else:
            say(f"Logs dieses Testlaufs: {run_dir / 'logs'} (bis zum nächsten Testlauf)")
    raise SystemExit(code)


# --- make bench ---------------------------------------------------------------------------------


def bench(args: list[str]) -> None:
    data = embedded.ensure_data_dir()
    ensure_secret_key(data)
    started: list[str] = []
    code = 1
    try:
        env = {**os.environ, **start_services(data, started)}
        result = subprocess.run(
            [PYTHON, "-m", "bench.run", *args], cwd=BASE_DIR, env=env, check=False
        )
        code = result.returncode
    except KeyboardInterrupt:
        code = 130
    finally:
        stop_services(started, data)
    raise SystemExit(code)


def main(argv: list[str]) -> None:
    if not argv:
        fail("Aufruf: python -m novaberg.launcher run|test|lint|bench|stop|services")
    command, rest = argv[0], argv[1:]
    if command == "run":
        run()
    elif command == "test":
        test(rest)
    elif command == "lint":
        lint()
    elif command == "bench":
        bench(rest)
    elif command == "stop":
        data = embedded.data_dir()
        stop_services(["postgres", "redis"], data)
        for run_dir in clean_stale_test_runs(data):
            say(f"Verwaisten Testlauf beendet: {run_dir}")
    elif command == "services":
        data = embedded.ensure_data_dir()
        ensure_secret_key(data)
        start_services(data, [])
        say("Die Dienste laufen weiter, bis `make stop` sie beendet.")
    else:
        fail(f"unbekannter Befehl {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
