"""/healthz: each service "ok" or a reason; 503 when a required one is down."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from novaberg import embeddings, llm

REQUIRED = ("database", "pgvector", "redis", "worker", "embeddings")


def _database() -> str:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
        return "ok"
    except Exception as exc:
        return f"nicht erreichbar: {type(exc).__name__}"


def _pgvector() -> str:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cur.fetchone()
        return "ok" if row else "Erweiterung 'vector' fehlt: python manage.py migrate"
    except Exception as exc:
        return f"nicht prüfbar: {type(exc).__name__}"


def _redis() -> str:
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1
        )
        client.ping()
        return "ok"
    except Exception as exc:
        return f"nicht erreichbar: {type(exc).__name__}"


def _worker() -> str:
    from novaberg.celery import app

    try:
        replies = app.control.ping(timeout=1.0)
    except Exception as exc:
        return f"nicht prüfbar: {type(exc).__name__}"
    return "ok" if replies else "kein Celery-Worker antwortet"


def _llm() -> str:
    gateway = llm.get_gateway()
    if gateway.name == "offline":
        return "ok"
    return "ok" if llm.ping() else f"nicht erreichbar: {settings.LLM_BASE_URL}"


def _embeddings() -> str:
    try:
        embeddings.warm_up()
        return "ok"
    except Exception as exc:
        return f"nicht verfügbar: {exc}"[:200]


def healthz(request: HttpRequest) -> JsonResponse:
    checks = {
        "database": _database(),
        "pgvector": _pgvector(),
        "redis": _redis(),
        "worker": _worker(),
        "llm": _llm(),
        "embeddings": _embeddings(),
    }
    # An unreachable configured LLM is down too; the offline backend never is.
    down = [name for name in (*REQUIRED, "llm") if checks[name] != "ok"]
    checks["llm_backend"] = llm.backend_label()
    checks["embeddings_backend"] = embeddings.backend_label()
    return JsonResponse(checks, status=503 if down else 200)
