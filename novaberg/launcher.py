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

``run`` supervises daphne, the Celery worker and beat: one that dies is started again after a
pause that doubles (1 s, 2 s, 4 s … at most 30 s; back to 1 s after a minute of healthy running);
one that dies within seconds of its start five times in a row is a fault, not a crash, and the
launcher stops everything with one line saying so. Only Ctrl-C / SIGTERM stops the stack. The
children die with the launcher even when it is killed hard (``PR_SET_PDEATHSIG``); the embedded
PostgreSQL and Redis are daemons of the data folder and stay (the next ``run`` adopts them).

A test run always has a data folder of its own (``var/test/run-<pid>/``): its own PostgreSQL
cluster and a Redis on a free port, so a ``make run`` beside it, another checkout, or a second
test run never share a port, a database or a queue with it.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
            # The URL carries the password: the log line shows it redacted.
            verb = "gestartet" if state.started_now else "läuft"
            say(f"Redis (eingebettet) {verb}: {embedded.redact_url(state.url)}")
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


# `make run` without NOVABERG_FILES_BOUNDARY: a boundary inside the data folder with a sample
# folder of German notes, so a first try can release a folder at once. The launcher writes the
# sample before anything is released; the file service never writes into a released folder.
SAMPLE_SOURCE = BASE_DIR / "novaberg" / "sample_folder"
BOUNDARY_DIR_NAME = "ordner"
SAMPLE_NAME = "beispiel-notizen"  # files/views.py SAMPLE_FOLDER offers it on the folders page
SAMPLE_MARKER = "beispiel-notizen-angelegt"


@dataclass(frozen=True)
class BoundarySetup:
    env: dict[str, str]  # what the children get on top of the launcher's environment
    line: str  # the line of the ready banner that says what can be released
    sample: Path | None = None


def sample_folder_copy_once(data: Path, target: Path) -> bool:
    """Copy the sample notes into ``target`` once per data folder: a marker in the data folder
    (outside the boundary) remembers it, so a note the person changed or deleted is never
    written again; an existing file is never overwritten (O_EXCL)."""
    marker = data / SAMPLE_MARKER
    if marker.exists():
        return False
    target.mkdir(parents=True, exist_ok=True)
    for source in sorted(SAMPLE_SOURCE.iterdir()):
        if not source.is_file():
            continue
        try:
            fd = os.open(target / source.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out:
            out.write(source.read_bytes())
    marker.write_text(f"{target}\n")
    return True


def files_boundary_default(data: Path, environ: Mapping[str, str] | None = None) -> BoundarySetup:
    """NOVABERG_FILES_BOUNDARY for `make run`: as given when set (also when set empty: then
    nothing can be released, on purpose), else ``<data>/ordner`` with the sample folder."""
    environ = os.environ if environ is None else environ
    if "NOVABERG_FILES_BOUNDARY" in environ:
        given = environ["NOVABERG_FILES_BOUNDARY"].strip()
        if not given:
            return BoundarySetup(
                {}, "NOVABERG_FILES_BOUNDARY ist leer: kein Ordner ist freigebbar."
            )
        return BoundarySetup({}, f"Freigeben lässt sich, was hier liegt: {given}")
    boundary = (data / BOUNDARY_DIR_NAME).resolve()
    boundary.mkdir(parents=True, exist_ok=True)
    sample = boundary / SAMPLE_NAME
    sample_folder_copy_once(data, sample)
    line = f"Erlaubter Bereich für Ordner: {boundary}"
    if sample.is_dir():
        line += f"; zum Ausprobieren: {sample}"
    return BoundarySetup({"NOVABERG_FILES_BOUNDARY": str(boundary)}, line, sample)


def ready_banner(url: str, password: str, *, password_source: str, boundary_line: str) -> str:
    """The last lines of `make run` once it serves: URL and login, framed, so they are found
    at a glance under the start-up log."""
    lines = [
        f"Nova läuft: {url}",
        f"Login: {DEMO_USER} / {password}  ({password_source})",
        boundary_line,
        "Ctrl-C beendet alles; `make stop` stoppt übrig gebliebene Datenbankserver.",
    ]
    width = max(len(line) for line in lines)
    rule = "═" * (width + 2)
    body = [f"║ {line.ljust(width)} ║" for line in lines]
    return "\n".join([f"╔{rule}╗", *body, f"╚{rule}╝"])


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
    supervisor: Supervisor | None = None
    try:
        orphaned = orphaned_services(data)
        boundary = files_boundary_default(data)
        env = {**os.environ, **start_services(data, started), **boundary.env}
        adopt_services(data, orphaned, started)
        check_database(env)
        manage("migrate", "--no-input", "-v", "0", env=env)
        manage("collectstatic", "--no-input", "-v", "0", env=env)
        password = demo_password(data)
        ensure_demo_user(password, env)
        bind = os.environ.get("NOVABERG_BIND", "127.0.0.1")
        supervisor = Supervisor(app_children(bind, port), env=env)
        supervisor.start_all()
        url = f"http://{'127.0.0.1' if bind in {'0.0.0.0', '::'} else bind}:{port}/"
        # /healthz loads the embedding model in daphne (its first use) before anyone chats.
        health = _wait_ready(url + "healthz", supervisor)
        if health:
            say(f"noch nicht bereit: {health}")
        source = (
            "aus NOVABERG_DEMO_PASSWORD"
            if os.environ.get("NOVABERG_DEMO_PASSWORD", "").strip()
            else f"gespeichert in {data / 'demo_password'}"
        )
        print(
            ready_banner(url, password, password_source=source, boundary_line=boundary.line),
            flush=True,
        )
        while True:
            supervisor.tick()
            time.sleep(TICK_S)
    except KeyboardInterrupt:
        say("Ctrl-C: beende daphne, Worker und Beat …")
    except GaveUp as exc:
        print(f"novaberg: FEHLER: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    finally:
        if supervisor is not None:
            supervisor.stop_all()
        stop_services(started, data)
        release_owner(data)


def _install_stop_signals() -> None:
    def _stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _stop)
    # Also when started with SIGINT ignored (nohup, a shell's background job): Ctrl-C and
    # `kill -INT` must still stop everything cleanly.
    signal.signal(signal.SIGINT, _stop)


def _wait_ready(url: str, supervisor: Supervisor) -> str:
    """Poll /healthz until it answers 200; returns "" then, else what is still down. A child
    that dies meanwhile is restarted like later on: the probe never blocks the supervisor,
    though daphne's first /healthz takes as long as loading the embedding model."""
    parts = urllib.parse.urlsplit(url)
    probe = HealthProbe(parts.hostname or "127.0.0.1", parts.port or 80, parts.path)
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "daphne antwortet nicht"
    while time.monotonic() < deadline:
        supervisor.tick()
        answer = probe.step()
        if answer == "":
            return ""
        if answer is not None:
            last = answer
        time.sleep(TICK_S)
    probe.close()
    return last


class HealthProbe:
    """One GET in flight at a time, read without blocking: ``step()`` is None while it waits,
    "" once the answer is 200, else the reason (and the next step asks again)."""

    def __init__(self, host: str, port: int, path: str, timeout_s: float = 120.0) -> None:
        self.host, self.port, self.path, self.timeout_s = host, port, path, timeout_s
        self.sock: socket.socket | None = None
        self.sent_at = 0.0
        self.buffer = b""

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def step(self) -> str | None:
        if self.sock is None:
            try:
                self.sock = socket.create_connection((self.host, self.port), timeout=1.0)
                request = f"GET {self.path} HTTP/1.0\r\nHost: {self.host}\r\n\r\n"
                self.sock.sendall(request.encode())
                self.sock.setblocking(False)
            except OSError:
                self.close()
                return "daphne antwortet nicht"  # still starting
            self.sent_at, self.buffer = time.monotonic(), b""
            return None
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
            chunk = self.sock.recv(65536) if readable else None
        except OSError:
            self.close()
            return "daphne antwortet nicht"
        if chunk is None:
            if time.monotonic() - self.sent_at > self.timeout_s:
                self.close()
                return f"/healthz antwortet nicht binnen {self.timeout_s:.0f} s"
            return None
        if chunk:
            self.buffer += chunk
            return None
        self.close()  # HTTP/1.0: the answer ends with the connection
        head, _, body = self.buffer.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) >= 2 and status[1] == b"200":
            return ""
        return body.decode(errors="replace")[:300] or "daphne antwortet nicht"


# --- the servers a killed launcher left behind ----------------------------------------------------


def owner_file(data: Path) -> Path:
    """Which `run` started the embedded servers of ``data``: "<pid> <start time> <names…>"."""
    return data / "services.owner"


def orphaned_services(data: Path) -> list[str]:
    """The embedded servers a `run` started and left behind when it was killed hard (its owner
    file is there, its process is gone). Servers of `launcher services` have no owner."""
    try:
        pid_raw, started_raw, *names = owner_file(data).read_text().split()
        pid, started = int(pid_raw), float(started_raw)
    except (OSError, ValueError):
        return []
    now_started = _process_started(pid)
    if now_started is not None and abs(now_started - started) < 1.0:
        return []  # that launcher still runs (another `make run` on this folder)
    return [name for name in names if name in {"postgres", "redis"}]


def adopt_services(data: Path, orphaned: list[str], started: list[str]) -> None:
    """Take over the servers of a killed `run` (stopped at this run's end, like its own) and
    record this run as the owner of what it will stop."""
    for name in orphaned:
        if name not in started:
            label = "PostgreSQL" if name == "postgres" else "Redis"
            say(f"{label} eines abgebrochenen Laufs übernommen: Ctrl-C beendet es mit.")
            started.append(name)
    if started:
        me = os.getpid()
        owner_file(data).write_text(f"{me} {_process_started(me)} {' '.join(started)}\n")


def release_owner(data: Path) -> None:
    """Remove the owner file if it is this process's (a second run on the folder keeps off)."""
    try:
        pid = int(owner_file(data).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    if pid == os.getpid():
        owner_file(data).unlink(missing_ok=True)


# --- supervision of daphne, worker and beat -----------------------------------------------------

TICK_S = 0.5
BACKOFF_FIRST_S = 1.0
BACKOFF_CAP_S = 30.0
# A child that ran this long was healthy: its next crash waits the first pause again.
HEALTHY_AFTER_S = 60.0
# A child that dies this soon after its start, GIVE_UP_AFTER times in a row, cannot start at all
# (a code or configuration fault): restarting it forever would only hide that.
FAST_CRASH_S = 10.0
GIVE_UP_AFTER = 5
PR_SET_PDEATHSIG = 1


class GaveUp(RuntimeError):
    """A child keeps dying right after its start; the message names it and its exit status."""


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"durch Signal {signal.Signals(-code).name} beendet"
        except ValueError:
            return f"durch Signal {-code} beendet"
    return f"mit Exit-Status {code} beendet"


def _die_with_parent(sig: int) -> Callable[[], None] | None:
    """A preexec_fn: the child gets ``sig`` when the launcher dies, even by SIGKILL (Linux
    prctl). Elsewhere None: there only a clean stop ends the children."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here, not between fork and exec
    parent = os.getpid()

    def preexec() -> None:
        if libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) schlug fehl")
        if os.getppid() != parent:
            # The launcher died between fork and prctl: nobody would send the signal.
            os.kill(os.getpid(), sig)

    return preexec


@dataclass
class Child:
    """One supervised process: ``args`` after the Python executable; ``death_signal`` is what it
    gets when the launcher dies hard (the signal that ends it fastest without losing data)."""

    name: str
    args: list[str]
    death_signal: int = signal.SIGTERM
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    crashes: int = 0  # in a row, each before HEALTHY_AFTER_S: sets the pause
    fast_crashes: int = 0  # in a row, each before FAST_CRASH_S: GIVE_UP_AFTER ends the stack
    restarts: int = 0
    pids: list[int] = field(default_factory=list)


def app_children(bind: str, port: int) -> list[Child]:
    worker = [
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
    ]
    return [
        # SIGKILL: daphne keeps nothing of its own (sessions and rows are in PostgreSQL, the
        # channel layer in Redis), and its graceful stop waits for every open request.
        Child(
            "daphne",
            ["-m", "daphne", "-b", bind, "-p", str(port), "novaberg.asgi:application"],
            death_signal=signal.SIGKILL,
        ),
        # SIGQUIT: Celery's cold shutdown, at once (SIGTERM would wait for running tasks); its
        # pool processes die with it by Celery's own PR_SET_PDEATHSIG.
        Child("Celery-Worker", worker, death_signal=signal.SIGQUIT),
        # SIGTERM: beat writes its schedule file and ends.
        Child("Celery-Beat", ["-m", "celery", "-A", "novaberg", "beat", "-l", "INFO"]),
    ]


class Supervisor:
    """Starts the children, restarts one that dies (pause doubling up to a cap), and stops all
    of them in order. ``tick()`` is called from the launcher's loop; it never blocks."""

    def __init__(
        self,
        children: list[Child],
        *,
        env: Mapping[str, str],
        cwd: Path = BASE_DIR,
        log: Callable[[str], None] = say,
        clock: Callable[[], float] = time.monotonic,
        backoff_first_s: float = BACKOFF_FIRST_S,
        backoff_cap_s: float = BACKOFF_CAP_S,
        healthy_after_s: float = HEALTHY_AFTER_S,
        fast_crash_s: float = FAST_CRASH_S,
        give_up_after: int = GIVE_UP_AFTER,
    ) -> None:
        self.children = children
        self.env = dict(env)
        self.cwd = cwd
        self.log = log
        self.clock = clock
        self.backoff_first_s = backoff_first_s
        self.backoff_cap_s = backoff_cap_s
        self.healthy_after_s = healthy_after_s
        self.fast_crash_s = fast_crash_s
        self.give_up_after = give_up_after

    def start_all(self) -> None:
        for child in self.children:
            self._spawn(child)

    def _spawn(self, child: Child) -> None:
        # Own session and process group each: a Ctrl-C in the terminal reaches only us, and we
        # stop them in order; killpg also reaches what a child forked (the worker's pool).
        child.proc = subprocess.Popen(
            [PYTHON, *child.args],
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
            preexec_fn=_die_with_parent(child.death_signal),
        )
        child.started_at = self.clock()
        child.restart_at = None
        child.pids.append(child.proc.pid)

    def pause_s(self, crashes: int) -> float:
        """The pause before restart number ``crashes`` of a row: 1, 2, 4 … capped."""
        return float(min(self.backoff_cap_s, self.backoff_first_s * 2 ** max(0, crashes - 1)))

    def tick(self) -> None:
        now = self.clock()
        for child in self.children:
            if child.restart_at is not None:
                if now >= child.restart_at:
                    self._spawn(child)
                    child.restarts += 1
                    assert child.proc is not None
                    self.log(f"{child.name} neu gestartet (PID {child.proc.pid}).")
                continue
            if child.proc is None or child.proc.poll() is None:
                continue
            self._crashed(child, now)

    def _crashed(self, child: Child, now: float) -> None:
        assert child.proc is not None
        code = child.proc.returncode
        ran_s = now - child.started_at
        # What the dead leader forked (the worker's pool) goes with it, before the new one.
        _kill_group(child.proc.pid, signal.SIGKILL)
        child.crashes = child.crashes + 1 if ran_s < self.healthy_after_s else 1
        child.fast_crashes = child.fast_crashes + 1 if ran_s < self.fast_crash_s else 0
        status = describe_exit(code)
        if child.fast_crashes >= self.give_up_after:
            raise GaveUp(
                f"{child.name} endet immer wieder gleich nach dem Start "
                f"({child.fast_crashes}-mal in Folge binnen {self.fast_crash_s:.0f} s, zuletzt "
                f"{status}). Kein weiterer Neustart: beende alles. Die Ursache steht in seiner "
                "Ausgabe darüber."
            )
        pause = self.pause_s(child.crashes)
        child.restart_at = now + pause
        self.log(
            f"{child.name} (PID {child.proc.pid}) ist unerwartet {status}. "
            f"Neustart in {pause:.0f} s ({child.crashes}. Absturz in Folge)."
        )

    def stop_all(self, timeout_s: float = 15.0) -> None:
        running = [c.proc for c in self.children if c.proc is not None and c.restart_at is None]
        for proc in running:
            if proc.poll() is None:
                _kill_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill_group(proc.pid, signal.SIGKILL)
                proc.wait()


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is empty already


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
            # The ONNX export of the packaged model (minutes on a busy machine) outlives a run.
            "NOVABERG_EMBEDDINGS_CACHE_DIR": os.environ.get("NOVABERG_EMBEDDINGS_CACHE_DIR")
            or str(embedded.ensure_data_dir() / "models"),
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
        # Kept running on purpose now: no later `run` takes them for a killed run's leftovers.
        owner_file(data).unlink(missing_ok=True)
        say("Die Dienste laufen weiter, bis `make stop` sie beendet.")
    else:
        fail(f"unbekannter Befehl {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
