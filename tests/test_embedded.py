"""The embedded services: started once, found again, stopped by their PID files."""

from __future__ import annotations

import socket
from pathlib import Path

import psycopg
import pytest
import redis

from novaberg import embedded


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def own_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = tmp_path / "d"
    monkeypatch.setenv("NOVABERG_DATA_DIR", str(data))
    monkeypatch.setenv("NOVABERG_REDIS_PORT", str(_free_port()))
    return data


def test_postgres_starts_is_found_again_and_stops(own_data_dir: Path) -> None:
    first = embedded.ensure_postgres()
    try:
        assert first.started_now
        again = embedded.ensure_postgres()
        # The running server is found again through its PID file, not started a second time.
        assert not again.started_now
        assert again.pid == first.pid
        with psycopg.connect(first.url) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            distance = conn.execute("SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone()
        assert distance is not None and distance[0] == pytest.approx(1.0)
        assert (own_data_dir / "pg" / "PG_VERSION").exists()
    finally:
        assert embedded.stop_postgres()
    assert embedded.postgres_state() is None


def test_postgres_keeps_data_across_a_restart(own_data_dir: Path) -> None:
    state = embedded.ensure_postgres()
    try:
        with psycopg.connect(state.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE keep (v int)")
            conn.execute("INSERT INTO keep VALUES (42)")
    finally:
        embedded.stop_postgres()
    state = embedded.ensure_postgres()
    try:
        assert state.started_now
        with psycopg.connect(state.url) as conn:
            row = conn.execute("SELECT v FROM keep").fetchone()
        assert row == (42,)
    finally:
        embedded.stop_postgres()


def test_redis_starts_on_loopback_is_found_again_and_stops(own_data_dir: Path) -> None:
    first = embedded.ensure_redis()
    try:
        assert first.started_now
        assert first.url.startswith("redis://127.0.0.1:")
        again = embedded.ensure_redis()
        assert not again.started_now and again.pid == first.pid
        client = redis.Redis.from_url(first.url)
        client.set("nova", "da")
        assert client.get("nova") == b"da"
        config = client.config_get("bind")
        assert config["bind"] == "127.0.0.1"
    finally:
        assert embedded.stop_redis()
    assert embedded.redis_state() is None


def test_redis_port_taken_is_a_clear_error(
    own_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        monkeypatch.setenv("NOVABERG_REDIS_PORT", str(blocker.getsockname()[1]))
        with pytest.raises(embedded.ServiceError, match="NOVABERG_REDIS_PORT"):
            embedded.ensure_redis()


def test_explicit_urls_start_nothing(own_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgres://u:p@db.example:5432/x")
    monkeypatch.setenv("REDIS_URL", "redis://cache.example:6379/0")
    assert embedded.database_url() == "postgres://u:p@db.example:5432/x"
    assert embedded.redis_url() == "redis://cache.example:6379/0"
    assert not (own_data_dir / "pg").exists()
    assert embedded.redis_state() is None


def test_default_redis_takes_a_free_port_when_6390_is_taken(
    own_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOVABERG_REDIS_PORT")
    blocker = None
    if not embedded._port_taken(embedded.DEFAULT_REDIS_PORT):
        # Another checkout's `make run` on the default port (or anything else holding it).
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", embedded.DEFAULT_REDIS_PORT))
        blocker.listen()
    try:
        state = embedded.ensure_redis()
        try:
            assert state.started_now
            assert not state.url.startswith(f"redis://127.0.0.1:{embedded.DEFAULT_REDIS_PORT}/")
            assert redis.Redis.from_url(state.url).ping()
            # Recorded in the data folder: found again, not started a second time.
            assert embedded.redis_state() == embedded.ServiceState(
                "redis", True, state.url, False, state.pid
            )
        finally:
            assert embedded.stop_redis()
    finally:
        if blocker is not None:
            blocker.close()


def test_state_readers_create_nothing(own_data_dir: Path) -> None:
    assert embedded.data_dir() == own_data_dir
    assert embedded.postgres_state() is None
    assert embedded.redis_state() is None
    assert embedded.redis_state(ping=True) is None
    assert not own_data_dir.exists()


def test_a_stale_pid_file_is_not_a_running_server(own_data_dir: Path) -> None:
    (own_data_dir / "redis").mkdir(parents=True)
    (own_data_dir / "redis" / "redis.pid").write_text("999999999")
    (own_data_dir / "redis" / "port").write_text("6390")
    (own_data_dir / "pg").mkdir()
    (own_data_dir / "pg" / "postmaster.pid").write_text(
        "999999999\n/x\n1\n5432\n/x\n\n0 0\nready\n"
    )
    assert embedded.redis_state() is None
    assert embedded.postgres_state() is None


def test_secret_files_are_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    assert embedded.write_secret(path, "eins")
    assert not embedded.write_secret(path, "zwei")
    assert path.read_text() == "eins"
    assert path.stat().st_mode & 0o777 == 0o600
