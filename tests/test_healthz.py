"""/healthz against the real services, with a real Celery worker."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from novaberg.celery import app
from tests.fakes.openai_server import FakeOpenAI

KEYS = {"database", "pgvector", "redis", "worker", "llm", "embeddings"}


@pytest.mark.django_db
def test_all_green_with_worker_and_offline_backend(celery_worker_proc: Any) -> None:
    answer = Client().get("/healthz")
    body = answer.json()
    assert answer.status_code == 200, body
    assert {key: body[key] for key in KEYS} == dict.fromkeys(KEYS, "ok")
    assert body["llm_backend"] == "Offline-Modus"


@pytest.mark.django_db
def test_a_task_round_trips_through_broker_and_worker(celery_worker_proc: Any) -> None:
    from novaberg.tasks import ping

    assert ping.delay().get(timeout=20) == "pong"
    assert app.control.ping(timeout=1.0)


@pytest.mark.django_db
def test_redis_down_is_503_with_a_reason(celery_worker_proc: Any, settings: Any) -> None:
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    answer = Client().get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["redis"].startswith("nicht erreichbar")
    assert answer.json()["database"] == "ok"


@pytest.mark.django_db
def test_configured_llm_is_checked(celery_worker_proc: Any, fake_llm: FakeOpenAI) -> None:
    answer = Client().get("/healthz")
    assert answer.json()["llm"] == "ok"
    assert "fake-model" in answer.json()["llm_backend"]


@pytest.mark.django_db
def test_unreachable_llm_is_503(celery_worker_proc: Any, settings: Any) -> None:
    from novaberg.llm import reset_gateway

    settings.LLM_BASE_URL = "http://127.0.0.1:1/v1"
    settings.LLM_TIMEOUT_S = 1
    settings.LLM_MAX_RETRIES = 0
    reset_gateway()
    answer = Client().get("/healthz")
    assert answer.status_code == 503
    assert answer.json()["llm"].startswith("nicht erreichbar")
