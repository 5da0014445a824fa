"""Nothing runs forever (issue 27): a turn left ``laufend`` by a dead web process is closed as
``unterbrochen`` — by the beat reaper and when a web process starts — and the chat says so under
the person's message; a turn of a live process is left alone."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import psutil
import pytest
from channels.testing import HttpCommunicator
from django.conf import settings as django_settings
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from conversation import reaper
from conversation.models import PipelineLog, Session, Turn
from conversation.tasks import reap_turns
from conversation.vocabulary import Status

HOST = [(b"host", b"localhost")]
NOTE = "Diese Antwort wurde unterbrochen (der Server wurde neu gestartet). Frag gern noch einmal."


def _owner_of(proc: subprocess.Popen[bytes]) -> str:
    """``Turn.owner`` as that process would have written it for a turn it runs."""
    me = reaper.current_owner()
    started = f"{psutil.Process(proc.pid).create_time():.2f}"
    return reaper.Owner(me.host, me.pid_namespace, proc.pid, started).text()


@pytest.fixture
def dead_owner() -> str:
    """The owner of a web process that ran a turn and died (it is really gone)."""
    proc = subprocess.Popen(["sleep", "60"])
    owner = _owner_of(proc)
    proc.kill()
    proc.wait()
    return owner


@pytest.fixture
def live_owner() -> Iterator[str]:
    """The owner of another web process that is still running its turn."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield _owner_of(proc)
    finally:
        proc.kill()
        proc.wait()


def _running(session: Session, text: str, owner: str, *, age_s: float = 0.0) -> Turn:
    return Turn.objects.create(
        session=session,
        role=Turn.Role.USER,
        text=text,
        status=Status.RUNNING,
        owner=owner,
        created_at=timezone.now() - timedelta(seconds=age_s),
    )


def _turns(api: APIClient, session: Session) -> dict[str, dict[str, Any]]:
    answer = api.get(f"/api/sessions/{session.pk}/turns/")
    assert answer.status_code == 200, answer.content
    return {row["text"]: row for row in answer.json()}


@pytest.mark.django_db
def test_beat_closes_the_turn_of_a_dead_process_and_leaves_a_live_one(
    api: APIClient, session: Session, dead_owner: str, live_owner: str
) -> None:
    lost = _running(session, "Wie heißt mein Hund?", dead_owner)
    alive = _running(session, "Und meine Katze?", live_owner)
    mine = _running(session, "Was mache ich gerade?", reaper.turn_owner())

    closed = reap_turns()

    assert closed == [{"turn_id": lost.pk, "step": reaper.STEP_DEAD}]
    rows = _turns(api, session)
    assert rows["Wie heißt mein Hund?"]["status"] == "unterbrochen"
    assert rows["Wie heißt mein Hund?"]["reply"] == ""
    assert [(p["node"], p["outcome"]) for p in rows["Wie heißt mein Hund?"]["pipeline"]] == [
        ("reaper", "unterbrochen")
    ]
    assert rows["Und meine Katze?"]["status"] == "laufend"
    assert rows["Was mache ich gerade?"]["status"] == "laufend"
    alive.refresh_from_db()
    mine.refresh_from_db()
    assert alive.finished_at is None and mine.finished_at is None
    # A second pass finds nothing more to do.
    assert reap_turns() == []
    assert PipelineLog.objects.filter(turn=lost, node="reaper").count() == 1


@pytest.mark.django_db
def test_a_reused_pid_is_not_the_owner(session: Session, live_owner: str) -> None:
    """The owner's number now belongs to a later process (another start time): the turn's own
    process is gone."""
    host, namespace, pid, started = live_owner.split("|")
    earlier = f"{host}|{namespace}|{pid}|{float(started) - 3600:.2f}"
    lost = _running(session, "Hallo?", earlier)

    assert [r.turn_id for r in reaper.turns_reap()] == [lost.pk]


@pytest.mark.django_db
def test_a_turn_of_another_host_is_closed_only_once_its_deadline_is_long_past(
    session: Session,
) -> None:
    other = "anderer-rechner|4026531836|4242|1700000000.00"
    past = float(django_settings.TURN_TOTAL_S) + reaper.margin_s()
    fresh = _running(session, "Noch dran?", other, age_s=5)
    stale = _running(session, "Schon lange her", other, age_s=past + 60)
    unowned = _running(session, "Vor dem Update", "", age_s=past + 60)

    closed = {r.turn_id: r.step for r in reaper.turns_reap()}

    assert closed == {stale.pk: reaper.STEP_OVERDUE, unowned.pk: reaper.STEP_OVERDUE}
    fresh.refresh_from_db()
    assert fresh.status == Status.RUNNING


@pytest.mark.django_db
def test_a_finished_turn_keeps_its_outcome(session: Session, dead_owner: str) -> None:
    done = _running(session, "Fertig geworden", dead_owner)
    Turn.objects.filter(pk=done.pk).update(status=Status.DONE, finished_at=timezone.now())

    assert reaper.turns_reap() == []
    done.refresh_from_db()
    assert done.status == Status.DONE


@pytest.mark.django_db
def test_a_turn_records_the_process_that_runs_it(api: APIClient, session: Session) -> None:
    answer = api.post(
        f"/api/sessions/{session.pk}/messages/", {"text": "Hallo Nova"}, format="json"
    )
    assert answer.status_code == 200, answer.content

    turn = Turn.objects.get(pk=answer.json()["turn_id"])
    assert turn.owner == reaper.turn_owner()
    assert not reaper.owner_gone(turn.owner)


def test_beat_runs_the_reaper() -> None:
    entry = django_settings.CELERY_BEAT_SCHEDULE["conversation-reap-turns"]
    assert entry["task"] == reap_turns.name == "conversation.tasks.reap_turns"


def _in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn`` in a worker thread whose database connection is closed after it (a connection
    left open keeps the test database from being dropped)."""
    from asgiref.sync import sync_to_async
    from django.db import connection

    def run() -> Any:
        try:
            return fn(*args)
        finally:
            connection.close()

    return sync_to_async(run, thread_sensitive=False)()


@pytest.mark.django_db(transaction=True)
async def test_a_starting_web_process_closes_the_turns_of_its_dead_predecessor(
    pair: tuple[Any, Session], dead_owner: str
) -> None:
    from novaberg.asgi import application

    _, session = pair
    lost = await _in_thread(_running, session, "Bist du noch da?", dead_owner)
    reaper.reset_start()  # as in a new process
    application.done = False
    try:
        # The first request of the process, whatever it asks for.
        answer = await HttpCommunicator(
            application, "GET", "/nirgends/", headers=HOST
        ).get_response(timeout=30)
        assert answer["status"] == 404

        await _in_thread(lost.refresh_from_db)
        assert (lost.status, lost.step) == (Status.INTERRUPTED, reaper.STEP_DEAD)
        # Once per process: a turn lost later is beat's to close.
        later = await _in_thread(_running, session, "Und jetzt?", dead_owner)
        await HttpCommunicator(application, "GET", "/nirgends/", headers=HOST).get_response(
            timeout=30
        )
        await _in_thread(later.refresh_from_db)
        assert later.status == Status.RUNNING
    finally:
        application.done = True


@pytest.mark.django_db
def test_the_chat_shows_the_interrupted_turn_with_a_note(
    user: Any, session: Session, dead_owner: str
) -> None:
    _running(session, "Wie heißt mein Hund?", dead_owner)
    reaper.turns_reap()

    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/chat/{session.pk}/").content.decode()

    asked = page.index(">Wie heißt mein Hund?</li>")
    note = page.index(NOTE)
    assert asked < note
    assert 'class="msg assistant interrupted"' in page and 'data-status="unterbrochen"' in page


@pytest.mark.django_db
def test_the_inspector_names_the_reaper(user: Any, session: Session, dead_owner: str) -> None:
    lost = _running(session, "Wie heißt mein Hund?", dead_owner)
    reaper.turns_reap()

    browser = Client()
    browser.force_login(user)
    page = browser.get(f"/turns/{lost.pk}/").content.decode()

    assert "Aufräumer (liegengebliebener Turn)" in page
    assert "unterbrochen" in page
