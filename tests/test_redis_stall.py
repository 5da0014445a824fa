"""A stalled Redis is answered within two seconds with a German sentence (issue 27), never a
500 and never after the whole stall: a login (token API and login page), /healthz and the
start of an index run.

The stall is real: ``CLIENT PAUSE`` on the test's Redis pauses every client for ``STALL_S``.
Each answer must come well before the pause ends; the bound is generous (the answer is meant
to take about one second) so that a loaded machine does not make it flaky, and it still fails
on code that waits for Redis, which answers only after the whole pause."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from django.conf import settings as django_settings
from django.test import Client
from rest_framework.test import APIClient

from files.api import INDEX_BROKER_DOWN
from files.models import FileRoot, IndexRun
from files.tests.watcher_helpers import small_corpus
from novaberg.login_throttle import UNAVAILABLE_TEXT

pytestmark = [pytest.mark.slow]

STALL_S = 6.0
# Well under the stall: code that waits for Redis answers only after STALL_S.
ANSWERED_WITHIN_S = 3.5


@pytest.fixture
def stalled_redis() -> Iterator[None]:
    """Redis pauses every client for STALL_S; the test runs inside the pause, and the fixture
    returns only after it ended (the next test gets a Redis that answers)."""
    admin = redis.Redis.from_url(django_settings.REDIS_URL)
    admin.execute_command("CLIENT", "PAUSE", int(STALL_S * 1000), "ALL")
    ends = time.monotonic() + STALL_S
    try:
        yield
    finally:
        time.sleep(max(0.0, ends - time.monotonic()) + 0.3)
        admin.ping()
        admin.close()


def timed(call: Any) -> tuple[Any, float]:
    started = time.monotonic()
    result = call()
    return result, time.monotonic() - started


@pytest.mark.django_db
def test_a_token_login_while_redis_stalls_is_refused_with_503(
    user: Any, stalled_redis: None
) -> None:
    client = APIClient()
    client.raise_request_exception = False
    response, took = timed(
        lambda: client.post(
            "/api/auth/token/", {"username": user.username, "password": "geheim123"}, format="json"
        )
    )
    assert response.status_code == 503, response.content[:300]
    assert response.json() == {
        "status": "fehler",
        "step": "zaehler_nicht_erreichbar",
        "reason": UNAVAILABLE_TEXT,
    }
    assert took < ANSWERED_WITHIN_S, took


@pytest.mark.django_db
def test_a_login_on_the_page_while_redis_stalls_says_so(user: Any, stalled_redis: None) -> None:
    client = Client(raise_request_exception=False)
    response, took = timed(
        lambda: client.post("/login/", {"username": user.username, "password": "falsch"})
    )
    assert response.status_code == 503
    assert UNAVAILABLE_TEXT in response.content.decode("utf-8")
    assert "_auth_user_id" not in client.session
    assert took < ANSWERED_WITHIN_S, took


@pytest.mark.django_db
def test_healthz_while_redis_stalls_is_503_within_two_seconds(stalled_redis: None) -> None:
    response, took = timed(lambda: Client(raise_request_exception=False).get("/healthz"))
    assert response.status_code == 503
    body = response.json()
    assert body["redis"] != "ok" and body["database"] == "ok"
    assert took < ANSWERED_WITHIN_S, took


@pytest.fixture
def active_root(api: APIClient, tmp_path: Path, settings: Any) -> int:
    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    root_id: int = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}).json()["id"]
    assert api.post(f"/api/roots/{root_id}/confirm/").status_code == 200
    return root_id


# Committed rows: the task is sent on commit, as in production.
@pytest.mark.django_db(transaction=True)
def test_starting_an_index_run_while_redis_stalls_is_503_within_two_seconds(
    api: APIClient, active_root: int, request: pytest.FixtureRequest
) -> None:
    runs_before = IndexRun.objects.filter(root_id=active_root).count()
    request.getfixturevalue("stalled_redis")
    api.raise_request_exception = False
    response, took = timed(lambda: api.post(f"/api/roots/{active_root}/index/"))
    assert response.status_code == 503, response.content[:300]
    assert response.json() == {
        "status": "fehler",
        "step": "auftragsdienst_nicht_erreichbar",
        "reason": INDEX_BROKER_DOWN,
    }
    assert took < ANSWERED_WITHIN_S, took
    # Nothing waits for a task that was never sent.
    assert IndexRun.objects.filter(root_id=active_root).count() == runs_before
    assert FileRoot.objects.get(pk=active_root).state == FileRoot.State.ACTIVE


LONG_STALL_S = 10.0


@pytest.mark.django_db(transaction=True)
def test_a_broker_that_stalls_after_answering_is_503_before_the_stall_ends(
    api: APIClient, active_root: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stall begins between the broker's answer and the task's send (on commit): Celery's
    # bounded read timeout and single retry (settings.CELERY_BROKER_TRANSPORT_OPTIONS,
    # CELERY_TASK_PUBLISH_RETRY_POLICY) end the send, and the answer is still the 503.
    from novaberg import health

    monkeypatch.setattr(health, "broker_answers", lambda: True)
    admin = redis.Redis.from_url(django_settings.REDIS_URL)
    admin.execute_command("CLIENT", "PAUSE", int(LONG_STALL_S * 1000), "ALL")
    ends = time.monotonic() + LONG_STALL_S
    try:
        api.raise_request_exception = False
        response, took = timed(lambda: api.post(f"/api/roots/{active_root}/index/"))
    finally:
        time.sleep(max(0.0, ends - time.monotonic()) + 0.3)
        admin.close()
    assert response.status_code == 503, response.content[:300]
    assert response.json()["reason"] == INDEX_BROKER_DOWN
    assert took < LONG_STALL_S - 1, took


@pytest.mark.django_db(transaction=True)
def test_confirming_a_folder_while_redis_stalls_keeps_the_release_and_names_the_unsent_run(
    api: APIClient, tmp_path: Path, settings: Any
) -> None:
    # The confirm is committed before its first run's task is sent: a broker that does not
    # take the task must not turn the committed release into a 500. The run says why it never
    # started, and beat's next run of the root takes over.
    from files.watcher.runs import BROKER_DOWN_NOTE

    inside = tmp_path / "rand"
    small_corpus(inside / "notizen")
    settings.FILES_BOUNDARY = [str(inside)]
    settings.FILES_BASE_DIR = inside
    root_id: int = api.post("/api/roots/", {"path": "notizen", "eigentum": "nutzer"}).json()["id"]
    admin = redis.Redis.from_url(django_settings.REDIS_URL)
    admin.execute_command("CLIENT", "PAUSE", int(LONG_STALL_S * 1000), "ALL")
    ends = time.monotonic() + LONG_STALL_S
    try:
        api.raise_request_exception = False
        response = api.post(f"/api/roots/{root_id}/confirm/")
    finally:
        time.sleep(max(0.0, ends - time.monotonic()) + 0.3)
        admin.close()
    assert response.status_code == 200, response.content[:300]
    assert response.json()["state"] == FileRoot.State.ACTIVE
    root = FileRoot.objects.get(pk=root_id)
    assert root.state == FileRoot.State.ACTIVE
    run = IndexRun.objects.filter(root_id=root_id).order_by("-pk").first()
    assert run is not None
    assert run.state == IndexRun.State.ABORTED
    assert run.note == BROKER_DOWN_NOTE
    # What the person sees of the root is that run, with its note.
    assert root.last_run_id == run.pk
