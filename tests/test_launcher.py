"""`make run`'s launcher, for real: it serves the printed URL, and Ctrl-C leaves nothing running."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

BASE_DIR = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env(port: int) -> dict[str, str]:
    env = dict(os.environ)
    # A database, Redis database and demo password of its own: the launcher migrates and sets the
    # demo login, which must not touch the app's own database (`make run`'s demo user).
    env.update(
        {
            "NOVABERG_PORT": str(port),
            "NOVABERG_REDIS_DB": "2",
            "NOVABERG_DATABASE_NAME": "novaberg_launcher_test",
            "NOVABERG_DEMO_PASSWORD": "launcher-test-pw",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


@pytest.mark.slow
def test_run_serves_the_printed_url_and_ctrl_c_stops_everything() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "novaberg.launcher", "run"],
        cwd=BASE_DIR,
        env=_env(port),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = None
    output: list[str] = []
    try:
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while time.monotonic() < deadline and url is None:
            line = proc.stdout.readline()
            if not line and proc.poll() is not None:
                break
            output.append(line)
            if "Nova läuft:" in line:
                url = line.split("Nova läuft:")[1].split()[0]
        assert url == f"http://127.0.0.1:{port}/", "".join(output)[-3000:]
        children = psutil.Process(proc.pid).children(recursive=True)
        assert len(children) >= 3  # daphne, worker, beat
        health: dict[str, str] = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url + "healthz", timeout=5) as answer:
                    health = json.loads(answer.read())
                    break
            except Exception:
                time.sleep(0.5)  # daphne or the worker still starting
        assert health.get("database") == "ok" and health.get("worker") == "ok", health
        with urllib.request.urlopen(url + "login/", timeout=5) as page:
            assert "Anmelden" in page.read().decode()
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        assert proc.wait(40) == 0 or proc.returncode is not None
        time.sleep(0.5)
        alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
        assert alive == [], f"left running: {alive}"
    finally:
        if proc.poll() is None:
            proc.kill()


def test_port_in_use_is_one_clear_line() -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "novaberg.launcher", "run"],
            cwd=BASE_DIR,
            env=_env(port),
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode != 0
    assert f"Port {port} ist schon belegt" in result.stderr
    assert "NOVABERG_PORT" in result.stderr
    assert "Traceback" not in result.stderr


def test_unreachable_database_is_one_clear_line() -> None:
    env = _env(_free_port())
    env["DATABASE_URL"] = "postgres://nova:x@127.0.0.1:1/nirgends"
    result = subprocess.run(
        [sys.executable, "-m", "novaberg.launcher", "run"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "Datenbank nicht erreichbar" in result.stderr
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
