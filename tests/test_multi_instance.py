"""More than one machine: two daphne instances, two Celery workers and one beat against the same
PostgreSQL and Redis (issue 16, "More than one machine").

Everything here is a real process of the project. The test's processes use a Redis database of
their own (``REDIS_DB``) so the suite's shared worker never takes their tasks; the database is
the test database (committed rows: ``transactional_db``).

What must hold with two of everything:
- chats on both web instances, for the same session and for different sessions, at the same
  time: every turn stored once, every reply to its own message, a session's turns in order;
- two roots indexed while both workers run, plus the same root queued on both workers at once:
  one run per root at a time (the advisory lock), every index row once;
- a worker SIGKILLed in the middle of a run: beat's reaper finds the stopped heartbeat and
  queues the root again, the other worker finishes it, and the index equals a clean run's.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from conversation.models import Character, Session, Turn
from conversation.tests.socket_client import SocketClient
from files.models import FileRoot, IndexEntry, IndexRun
from files.tests.watcher_helpers import index_snapshot, make_root, write
from files.watcher import index_root_run
from tests import processes
from tests.factories import SessionFactory, UserFactory
from tests.processes import Stack

pytestmark = [pytest.mark.django_db(transaction=True)]

REDIS_DB = "7"
FILES = 40
MESSAGES = 3  # per client
# Five Python processes importing Django and PyTorch at once on a busy 2-core machine.
START_TIMEOUT_S = 240.0


def _redis_url() -> str:
    return settings.REDIS_URL.rsplit("/", 1)[0] + "/" + REDIS_DB


def _overrides() -> dict[str, str]:
    return {
        "NOVABERG_REDIS_DB": REDIS_DB,
        "NOVABERG_LLM_BASE_URL": "",
        "NOVABERG_LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
        # Slow the runs down so the kill lands in the middle of one (test hook, files/tests).
        "NOVABERG_FILES_TEST_HOOK": "files.tests.hooks:slow_files",
        "NOVABERG_FILES_TEST_HOOK_DELAY_S": "0.3",
        # Beat's reaper every second; a run whose heartbeat stood still 4 s lost its worker.
        "NOVABERG_FILES_RUN_REAP_EVERY_S": "1",
        "NOVABERG_FILES_RUN_STALE_AFTER_S": "4",
    }


@pytest.fixture
def stack(tmp_path: Path, django_db_setup: None) -> Iterator[Stack]:
    redis.Redis.from_url(_redis_url()).flushdb()
    s = Stack(
        tmp_path,
        redis_url=_redis_url(),
        env=processes.process_env(**_overrides()),
        start_timeout_s=START_TIMEOUT_S,
    )
    try:
        yield s
    finally:
        s.stop()
        redis.Redis.from_url(_redis_url()).flushdb()


def _cookie(user: User) -> str:
    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}"


async def _chat(port: int, session_id: int, cookie: str, label: str) -> list[dict[str, Any]]:
    client = await SocketClient.open(
        port, f"/ws/sessions/{session_id}/", origin=f"http://127.0.0.1:{port}", cookie=cookie
    )
    dones = []
    try:
        for i in range(MESSAGES):
            await client.send_json({"text": f"Erzähl mir etwas Schönes ({label} {i})."})
            events = await client.turn(timeout=120)
            assert events[-1]["type"] == "done", events
            dones.append(events[-1])
    finally:
        await client.close()
    return dones


async def _all_chats(jobs: list[tuple[int, int, str, str]]) -> list[list[dict[str, Any]]]:
    return list(await asyncio.gather(*(_chat(*job) for job in jobs)))


def _corpus(base: Path, topic: str) -> None:
    for i in range(FILES):
        write(base, f"{topic}{i:02d}.md", f"# {topic} {i}\n\nNotiz {i} über {topic} und Wege.\n")


def _assert_session_in_order(session: Session, expected_user_turns: int) -> None:
    turns = list(Turn.objects.filter(session=session).order_by("created_at", "id"))
    users = [t for t in turns if t.role == Turn.Role.USER]
    assert len(users) == expected_user_turns, [t.text for t in users]  # each stored once
    assert len({t.text for t in users}) == expected_user_turns
    # Strictly message, its reply, message, its reply …: the session lock kept the order.
    for message, reply in zip(turns[::2], turns[1::2], strict=True):
        assert message.role == Turn.Role.USER and reply.role == Turn.Role.ASSISTANT
        assert reply.reply_to_id == message.pk


def _wait(predicate: Any, what: str, stack: Stack, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"{what}\n{stack.logs()}"
        time.sleep(0.2)


def test_two_web_two_workers_one_beat_lose_and_double_nothing(stack: Stack, tmp_path: Path) -> None:
    nova = Character.objects.get(name="Nova")
    anna = UserFactory.create(username="anna")
    ben = UserFactory.create(username="ben")
    shared = SessionFactory.create(user=anna, character=nova)
    own = SessionFactory.create(user=ben, character=nova)
    _corpus(tmp_path / "garten", "Garten")
    _corpus(tmp_path / "reisen", "Reisen")
    _corpus(tmp_path / "clean", "Garten")
    garden = make_root(anna, nova, tmp_path / "garten")
    travel = make_root(ben, nova, tmp_path / "reisen")

    (web_a, web_b), (first, second) = stack.start_all(web=2, workers=["eins", "zwei"])

    # Two roots on two workers at the same time, and the garden root queued a second time.
    for root in (garden, travel, garden):
        stack.app.send_task("files.tasks.index_root", args=(root.pk,))

    def both_roots_mid_run() -> bool:
        # A solo worker runs one task at a time: two roots running at once are two workers.
        return all(
            IndexRun.objects.filter(root=root, state=IndexRun.State.RUNNING).exists()
            and IndexEntry.objects.filter(root=root).count() >= 3
            for root in (garden, travel)
        )

    _wait(both_roots_mid_run, "the two roots never ran on the two workers at once", stack)
    # Kill one worker in the middle of its run (which root it held shows in the runs below).
    killed = stack.workers[first]
    killed.send_signal(signal.SIGKILL)
    killed.wait(10)
    assert stack.workers[second].poll() is None
    assert IndexEntry.objects.filter(root__in=[garden, travel]).count() < 2 * FILES, "too late"

    # Meanwhile: Anna's one session from both web instances at once, Ben's on the second.
    anna_cookie, ben_cookie = _cookie(anna), _cookie(ben)
    chats = asyncio.run(
        _all_chats(
            [
                (web_a, shared.pk, anna_cookie, "A"),
                (web_b, shared.pk, anna_cookie, "B"),
                (web_b, own.pk, ben_cookie, "Ben"),
            ]
        )
    )
    turn_ids = [done["turn_id"] for dones in chats for done in dones]
    assert len(turn_ids) == len(set(turn_ids)) == 3 * MESSAGES  # no turn answered twice
    _assert_session_in_order(shared, 2 * MESSAGES)
    _assert_session_in_order(own, MESSAGES)

    # Beat's reaper requeues the dead run; the surviving worker finishes both roots.
    def both_done() -> bool:
        roots = FileRoot.objects.filter(pk__in=[garden.pk, travel.pk])
        return all(
            r.last_run_id is not None
            and IndexRun.objects.get(pk=r.last_run_id).state == IndexRun.State.DONE
            and IndexEntry.objects.filter(root=r).count() == FILES
            and not IndexRun.objects.filter(
                root=r, state__in=[IndexRun.State.WAITING, IndexRun.State.RUNNING]
            ).exists()
            for r in roots
        )

    _wait(both_done, "the roots were not both indexed after the kill", stack, timeout_s=180)

    dead = IndexRun.objects.filter(root__in=[garden, travel], state=IndexRun.State.REQUEUED)
    assert dead.count() == 1, list(IndexRun.objects.values("root_id", "state", "note"))
    assert dead.get().requeued_as_id is not None
    for root in (garden, travel):
        rows = IndexEntry.objects.filter(root=root)
        assert rows.count() == FILES
        assert rows.values("rel_path").distinct().count() == FILES  # every index row once
        runs = list(IndexRun.objects.filter(root=root).order_by("started_at"))
        # One run per root at a time: no two runs' running times overlap.
        ran = [r for r in runs if r.started_at is not None and r.finished_at is not None]
        for earlier, later in zip(ran, ran[1:], strict=False):
            assert earlier.finished_at <= later.started_at or earlier.state in (
                IndexRun.State.REQUEUED,
            ), [(r.pk, r.state, r.started_at, r.finished_at) for r in runs]

    # Both roots' indexes equal a clean run of the same files.
    _corpus(tmp_path / "clean-reisen", "Reisen")
    for root, twin_dir in ((garden, "clean"), (travel, "clean-reisen")):
        twin = make_root(root.user, nova, tmp_path / twin_dir)
        index_root_run(root_id=twin.pk)
        assert index_snapshot(root) == index_snapshot(twin)
