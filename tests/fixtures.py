"""Shared fixtures: people, sessions, API clients, and a real Celery worker on the test DB.

The suite runs only through the launcher (`make test`, `python -m novaberg.launcher test …`),
which gives every run its own data folder, PostgreSQL and Redis on a free port.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from conversation.models import Character, Session
from tests import processes
from tests.factories import SessionFactory, UserFactory


def pytest_configure(config: pytest.Config) -> None:
    if not os.environ.get("NOVABERG_TEST_RUN"):
        pytest.exit(
            "Die Tests laufen über `make test` oder `python -m novaberg.launcher test <pytest-"
            "Argumente>`: so hat jeder Lauf seine eigene Datenbank und sein eigenes Redis.",
            returncode=2,
        )


def _ensure_nova() -> None:
    """Nova comes from a data migration; a transactional test's flush removes her, so every test
    that gets a database gets her back (with the migration's own wording)."""
    from django.apps import apps

    if not Character.objects.filter(name="Nova").exists():
        migration = importlib.import_module("conversation.migrations.0002_nova")
        migration.create_nova(apps, None)


@pytest.fixture
def _django_db_helper(_django_db_helper: None, request: pytest.FixtureRequest) -> None:
    """Wraps pytest-django's database set-up (behind ``db``, ``transactional_db`` and the
    ``django_db`` marker) so each database test finds Nova."""
    from pytest_django.fixtures import is_django_unittest

    if not is_django_unittest(request):
        _ensure_nova()


@pytest.fixture(scope="session", autouse=True)
def _files_boundary_covers_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Reads and watcher runs check every root against the boundary again (DESIGN.md
    "Files"); the roots tests make live under pytest's temp folder, so that folder is the
    boundary of this process and of every worker it starts. A test about the boundary sets
    its own."""
    from django.conf import settings as django_settings

    base = str(tmp_path_factory.getbasetemp().resolve())
    os.environ["NOVABERG_FILES_BOUNDARY"] = base
    django_settings.FILES_BOUNDARY = [base]


@pytest.fixture(autouse=True)
def _offline_by_default(settings: Any) -> Iterator[None]:
    """Every test starts on the offline backend unless it asks for the fake LLM."""
    from novaberg.llm import reset_gateway

    settings.LLM_BASE_URL = ""
    reset_gateway()
    yield
    reset_gateway()


@pytest.fixture
def user(db: None) -> Any:
    return UserFactory(username="anna")


@pytest.fixture
def other_user(db: None) -> Any:
    return UserFactory(username="bert")


@pytest.fixture
def nova(db: None) -> Character:
    return Character.objects.get(name="Nova")


@pytest.fixture
def session(user: Any, nova: Character) -> Session:
    return SessionFactory.create(user=user, character=nova)


def token_client(user: Any) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(user: Any) -> APIClient:
    return token_client(user)


@pytest.fixture
def other_api(other_user: Any) -> APIClient:
    return token_client(other_user)


@pytest.fixture(scope="session")
def celery_worker_proc(django_db_setup: None, django_db_blocker: Any) -> Iterator[Any]:
    """A real Celery worker process (prefork), on the test database and the test Redis DB.

    Tests that hand work to it must use ``transactional_db``: the worker cannot see rows inside
    a test's open transaction.
    """
    from novaberg.celery import app

    proc = processes.start(
        ["celery", "-A", "novaberg", "worker", "-l", "INFO", "--concurrency", "1",
         "-n", f"test-{os.getpid()}@%h", "--without-gossip", "--without-mingle"],
        log_path=processes.log_dir() / "test-worker.log",
        ready=lambda: bool(app.control.ping(timeout=0.5)),
    )  # fmt: skip
    try:
        yield proc
    finally:
        processes.stop(proc)
