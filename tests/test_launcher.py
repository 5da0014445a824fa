"""`make run`'s and `make test`'s launcher, for real: a fresh data folder starts cleanly (also
with a demo password that begins with '-'), serves the printed URL, Ctrl-C leaves nothing
running, and a test run has services of its own beside anything on the default ports."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from django.conf import settings

from novaberg import embedded, launcher

BASE_DIR = Path(__file__).resolve().parent.parent
DASH_PASSWORD = "-5wafQx9_kT2"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(port: int, data: Path) -> dict[str, str]:
    """A fresh data folder of its own: the launcher starts its own PostgreSQL and Redis there,
    as `make run` does on a new machine (nothing of this test run is handed down)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "REDIS_URL",
            "NOVABERG_REDIS_PORT",
            "NOVABERG_REDIS_DB",
            "NOVABERG_DEMO_PASSWORD",
            "DJANGO_SECRET_KEY",
            "NOVABERG_TEST_RUN",
        }
    }
    env.update(
        {"NOVABERG_PORT": str(port), "NOVABERG_DATA_DIR": str(data), "PYTHONUNBUFFERED": "1"}
    )
    return env


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_run_on_a_fresh_folder_with_a_dash_password_serves_and_ctrl_c_stops_everything(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # A data folder from before the fix: its demo password begins with '-' (1 in 64 did), and
    # `ensure_user --password -5waf…` died in argparse on every start.
    (data / "demo_password").write_text(DASH_PASSWORD)
    (data / "demo_password").chmod(0o644)
    port = _free_port()
    env = _env(port, data)
    env.pop("NOVABERG_FILES_BOUNDARY", None)  # a fresh machine: `make run` sets a default
    proc = subprocess.Popen(
        [sys.executable, "-m", "novaberg.launcher", "run"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = None
    output: list[str] = []
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 300
        assert proc.stdout is not None
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            output.append(line)
            if "Nova läuft:" in line:
                url = line.split("Nova läuft:")[1].split()[0]
        assert url == f"http://127.0.0.1:{port}/", "".join(output)[-3000:]
        # The URL line is inside the closing frame: login, boundary, how to stop, bottom rule.
        output.extend(proc.stdout.readline() for _ in range(4))
        assert output[-6].startswith("╔") and output[-1].startswith("╚"), output[-6:]
        assert f"demo / {DASH_PASSWORD}" in output[-4]
        sample = data.resolve() / "ordner" / "beispiel-notizen"
        assert str(sample) in output[-3] and (sample / "garten.md").is_file()
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 3  # daphne, worker, beat
        # The password is on no command line `ps` shows.
        assert not any(DASH_PASSWORD in " ".join(c.cmdline()) for c in children)
        with urllib.request.urlopen(url + "healthz", timeout=30) as answer:
            health = json.loads(answer.read())
        assert health.get("database") == "ok" and health.get("worker") == "ok", health
        with urllib.request.urlopen(url + "login/", timeout=5) as page:
            assert "Anmelden" in page.read().decode()
        login = urllib.request.Request(
            url + "api/auth/token/",
            data=json.dumps({"username": "demo", "password": DASH_PASSWORD}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(login, timeout=10) as answer:
            assert json.loads(answer.read())["token"]
        # Files with secrets: owner only (the old password file is narrowed too).
        assert _mode(data / "secret_key") == 0o600
        assert _mode(data / "demo_password") == 0o600
        assert embedded.postgres_state(data) is not None
        assert embedded.redis_state(data) is not None

        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert proc.wait(60) == 0
        time.sleep(0.5)
        alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert alive == [], f"left running: {alive}"
        # The servers it started are stopped too.
        assert embedded.postgres_state(data) is None
        assert embedded.redis_state(data) is None
    finally:
        if proc.poll() is None:
            proc.kill()
        embedded.stop_postgres(data)
        embedded.stop_redis(data)


def test_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "novaberg.launcher", "run"],
            cwd=BASE_DIR,
            env=_env(port, tmp_path / "data"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert f"Port {port} ist schon belegt" in result.stderr
    assert "NOVABERG_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_database_is_one_clear_line_and_leaves_no_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(_free_port(), data)
    env["DATABASE_URL"] = "postgres://nova:x@127.0.0.1:1/nirgends"
    result = subprocess.run(
        [sys.executable, "-m", "novaberg.launcher", "run"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "Datenbank nicht erreichbar" in result.stderr
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
    # The Redis it had started for this run is stopped again.
    assert "Redis gestoppt" in result.stdout
    assert embedded.redis_state(data) is None


# --- the demo password --------------------------------------------------------------------------


def test_a_new_demo_password_never_looks_like_an_option() -> None:
    passwords = {launcher.new_demo_password() for _ in range(3000)}
    assert len(passwords) == 3000
    assert all(p[0].isalnum() and len(p) >= 12 for p in passwords)


def test_secret_files_are_created_for_the_owner_only(tmp_path: Path) -> None:
    old = os.umask(0)  # even a permissive umask must not widen them
    try:
        launcher.ensure_secret_key(tmp_path)
        password = launcher.demo_password(tmp_path)
    finally:
        os.umask(old)
    assert _mode(tmp_path / "secret_key") == 0o600
    assert _mode(tmp_path / "demo_password") == 0o600
    assert (tmp_path / "demo_password").read_text() == password
    key = (tmp_path / "secret_key").read_text()
    launcher.ensure_secret_key(tmp_path)
    assert (tmp_path / "secret_key").read_text() == key  # kept, never rewritten


def test_an_existing_dash_password_is_kept_and_narrowed(tmp_path: Path) -> None:
    (tmp_path / "demo_password").write_text(DASH_PASSWORD + "\n")
    (tmp_path / "demo_password").chmod(0o644)
    assert launcher.demo_password(tmp_path) == DASH_PASSWORD
    assert _mode(tmp_path / "demo_password") == 0o600


def test_the_demo_password_goes_to_ensure_user_on_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []

    def fake_run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append({"args": args, **kwargs})
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(launcher.subprocess, "run", fake_run)
    launcher.ensure_demo_user(DASH_PASSWORD, {})
    (call,) = calls
    assert not any(DASH_PASSWORD in arg for arg in call["args"])
    assert "--password-stdin" in call["args"]
    assert call["input"] == DASH_PASSWORD


# --- test runs: own folder, own ports -----------------------------------------------------------


def test_this_test_run_has_its_own_folder_and_ports() -> None:
    data = Path(settings.DATA_DIR)
    assert data.parent.name == "test" and data.name.startswith("run-")
    assert os.environ["NOVABERG_TEST_RUN"] == str(data)
    pg = embedded.postgres_state(data)
    rd = embedded.redis_state(data)
    assert pg is not None and settings.DATABASE_URL == pg.url  # the run's own cluster
    assert rd is not None and settings.REDIS_URL == rd.url  # the run's own Redis
    assert not settings.REDIS_URL.startswith(f"redis://127.0.0.1:{embedded.DEFAULT_REDIS_PORT}/")


@pytest.fixture
def redis_on_6390(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A second embedded Redis on the default port, as another checkout's `make run` holds it
    (when something holds 6390 already, that is the same situation)."""
    other = tmp_path / "andere-kopie"
    started = False
    if not embedded._port_taken(embedded.DEFAULT_REDIS_PORT):
        monkeypatch.setenv("NOVABERG_REDIS_PORT", str(embedded.DEFAULT_REDIS_PORT))
        embedded.ensure_redis(other)
        started = True
        monkeypatch.delenv("NOVABERG_REDIS_PORT")
    assert embedded._port_taken(embedded.DEFAULT_REDIS_PORT)
    try:
        yield "redis://127.0.0.1:6390/0"
    finally:
        if started:
            embedded.stop_redis(other)


def test_test_services_start_beside_a_make_run_on_the_default_ports(
    redis_on_6390: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("DATABASE_URL", "REDIS_URL", "NOVABERG_REDIS_DB"):
        monkeypatch.delenv(name, raising=False)
    # Even a NOVABERG_REDIS_PORT naming the taken port does not lead a test run onto it.
    monkeypatch.setenv("NOVABERG_REDIS_PORT", str(embedded.DEFAULT_REDIS_PORT))
    run_dir = tmp_path / "run"
    started: list[str] = []
    try:
        env = launcher.start_test_services(run_dir, started)
        assert started == ["postgres", "redis"]
        assert env["NOVABERG_DATA_DIR"] == str(run_dir)
        assert f":{embedded.DEFAULT_REDIS_PORT}/" not in env["REDIS_URL"]
        assert redis.Redis.from_url(env["REDIS_URL"]).ping()
        assert str(run_dir / "pg") in env["DATABASE_URL"] or "host=" in env["DATABASE_URL"]
        pg = embedded.postgres_state(run_dir)
        assert pg is not None and pg.url == env["DATABASE_URL"]
    finally:
        launcher.stop_services(started, run_dir)
    assert embedded.postgres_state(run_dir) is None and embedded.redis_state(run_dir) is None


def test_stale_test_runs_are_stopped_and_removed_live_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOVABERG_REDIS_PORT", raising=False)
    runs = tmp_path / "test"
    stale = runs / "run-1"
    stale.mkdir(parents=True)
    (stale / "owner").write_text("999999999 1.0")  # a launcher that is gone
    embedded.ensure_redis(stale, any_free_port=True)
    left_over = embedded.redis_state(stale)
    assert left_over is not None and left_over.pid is not None
    live = runs / f"run-{os.getpid()}"
    live.mkdir()
    (live / "owner").write_text(f"{os.getpid()} {psutil.Process().create_time()}")

    removed = launcher.clean_stale_test_runs(tmp_path)

    assert removed == [stale] and not stale.exists() and live.exists()
    assert not psutil.pid_exists(left_over.pid) or (
        psutil.Process(left_over.pid).status() == psutil.STATUS_ZOMBIE
    )


def test_without_a_boundary_make_run_sets_one_with_a_sample_folder_copied_once(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    setup = launcher.files_boundary_default(data, environ={})
    boundary = data.resolve() / "ordner"
    assert setup.env == {"NOVABERG_FILES_BOUNDARY": str(boundary)}
    assert setup.sample == boundary / "beispiel-notizen"
    notes = sorted(p.name for p in setup.sample.iterdir())
    assert notes == [".privat.md", "garten.md", "rezepte.md", "termine.md", "wanderung.txt"]
    assert "Tomaten" in (setup.sample / "garten.md").read_text(encoding="utf-8")
    assert str(setup.sample) in setup.line
    # Her changes are hers: a second start neither overwrites a note nor brings one back.
    (setup.sample / "garten.md").write_text("# Mein Garten\n", encoding="utf-8")
    (setup.sample / "termine.md").unlink()
    again = launcher.files_boundary_default(data, environ={})
    assert again.env == setup.env
    assert (setup.sample / "garten.md").read_text(encoding="utf-8") == "# Mein Garten\n"
    assert not (setup.sample / "termine.md").exists()


@pytest.mark.parametrize(
    ("given", "says"),
    [
        pytest.param("/srv/notizen", "/srv/notizen", id="set"),
        pytest.param("", "ist leer", id="set-empty-stays-closed"),
    ],
)
def test_a_given_boundary_is_kept_and_nothing_is_written(
    tmp_path: Path, given: str, says: str
) -> None:
    setup = launcher.files_boundary_default(tmp_path, environ={"NOVABERG_FILES_BOUNDARY": given})
    assert setup.env == {} and setup.sample is None and says in setup.line
    assert list(tmp_path.iterdir()) == []


def test_the_ready_banner_frames_the_url_and_the_login() -> None:
    banner = launcher.ready_banner(
        "http://127.0.0.1:8000/",
        "Xy7-pass",
        password_source="aus NOVABERG_DEMO_PASSWORD",
        boundary_line="Erlaubter Bereich für Ordner: /data/ordner",
    ).splitlines()
    assert banner[0].startswith("╔") and banner[-1].startswith("╚")
    assert len({len(line) for line in banner}) == 1  # a closed frame, every line as wide
    assert "Nova läuft: http://127.0.0.1:8000/" in banner[1]
    assert "Login: demo / Xy7-pass  (aus NOVABERG_DEMO_PASSWORD)" in banner[2]
    assert "make stop" in banner[-2]
