"""Importing the settings only reads the environment: it starts no server, opens no port, writes
no file and changes no environment variable; the embedding model loads on first use. manage.py
commands find the running services by their PID files, or say in one German line how to start
them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings

from novaberg import embedded

BASE_DIR = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, os, sys
import psutil
os.environ["DJANGO_SETTINGS_MODULE"] = "novaberg.settings"
before = dict(os.environ)
import django
django.setup()
import novaberg.asgi, novaberg.celery, novaberg.urls  # the entry points import the routing too
from django.conf import settings
me = psutil.Process()
# Django itself exports TIME_ZONE as TZ (django/conf/__init__.py); that is not ours.
changed = sorted(
    k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k) and k != "TZ"
)
print(json.dumps({
    "children": [p.pid for p in me.children(recursive=True)],
    "listening": [
        c.laddr.port for c in me.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
    ],
    "env_changed": changed,
    "model_modules": [m for m in ("torch", "sentence_transformers") if m in sys.modules],
    "database_url": settings.DATABASE_URL,
    "redis_url": settings.REDIS_URL,
    "not_running": settings.EMBEDDED_NOT_RUNNING,
    "ephemeral_key": settings.SECRET_KEY_EPHEMERAL,
}))
"""


def _clean_env(data: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY", "NOVABERG_REDIS_DB"}
    }
    env["NOVABERG_DATA_DIR"] = str(data)
    return env


def _probe(data: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=BASE_DIR,
        env=_clean_env(data),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def _manage(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=_clean_env(data),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_setup_with_nothing_running_starts_nothing_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "neu"
    seen = _probe(data)
    assert seen["children"] == [] and seen["listening"] == []
    assert seen["env_changed"] == []
    assert seen["model_modules"] == []
    # The old settings started PostgreSQL and Redis here and wrote the secret key: no trace.
    assert not data.exists()
    assert seen["not_running"] == ["postgres", "redis"]
    # Without a key file the process signs with a key of its own (manage.py check warns).
    assert seen["ephemeral_key"] is True


def test_setup_finds_the_running_services_by_their_pid_files() -> None:
    data = Path(settings.DATA_DIR)  # this test run's own folder, its servers up
    before = {p.name: p.stat().st_mtime_ns for p in data.iterdir() if p.is_file()}
    seen = _probe(data)
    assert seen["children"] == [] and seen["listening"] == []
    assert seen["not_running"] == []
    pg = embedded.postgres_state(data)
    redis = embedded.redis_state(data)
    assert pg is not None and redis is not None
    assert seen["database_url"] == pg.url and seen["redis_url"] == redis.url
    assert seen["ephemeral_key"] is False  # the launcher's key file is read
    after = {p.name: p.stat().st_mtime_ns for p in data.iterdir() if p.is_file()}
    assert after == before


def test_a_command_without_services_says_how_to_start_them(tmp_path: Path) -> None:
    data = tmp_path / "leer"
    result = _manage(data, "migrate", "--no-input")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("novaberg:")]
    assert len(lines) == 1, result.stderr
    assert "PostgreSQL (eingebettet" in lines[0] and "läuft nicht" in lines[0]
    assert "make run" in lines[0] and "DATABASE_URL" in lines[0]
    assert "Traceback" not in result.stderr
    assert not data.exists()


def test_a_command_with_an_unreachable_database_url_names_it(tmp_path: Path) -> None:
    env_data = tmp_path / "d"
    result = subprocess.run(
        [sys.executable, "manage.py", "showmigrations"],
        cwd=BASE_DIR,
        env={**_clean_env(env_data), "DATABASE_URL": "postgres://nova:x@127.0.0.1:1/nirgends"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "Datenbank nicht erreichbar" in result.stderr and "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_command_finds_the_running_embedded_services() -> None:
    data = Path(settings.DATA_DIR)
    listed = _manage(data, "showmigrations", "conversation")
    assert listed.returncode == 0, listed.stderr
    assert "0001_initial" in listed.stdout
    state = _manage(data, "services")
    assert state.returncode == 0, state.stderr
    assert "postgres: läuft" in state.stdout and "redis:    läuft" in state.stdout
