"""/healthz: each service "ok" or a reason; 503 when a required one is down."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from novaberg import embeddings, llm, llm_state
from novaberg.api_errors import ErrorSerializer

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
    # llm.ping records its probe in llm_state: the header badge reads it.
    return "ok" if llm.ping() else f"nicht erreichbar: {settings.LLM_BASE_URL}"


def badge(*, staff: bool, probe: bool = False) -> dict[str, object]:
    """The header badge: the model's real state (``llm_state``: the recent call outcomes and
    the last probe), a German label and sentence; the address only for staff. ``probe`` asks
    the model first when this process has had no news of it for a while."""
    offline = llm.get_gateway().name == "offline"
    state = (
        llm_state.probe_if_stale(offline=offline) if probe else llm_state.current(offline=offline)
    )
    address = ""
    if staff and not offline:
        address = llm.backend_label().removeprefix("Sprachmodell: ")
    return {
        "state": state.value,
        "label": llm_state.LABELS[state],
        "sentence": llm_state.SENTENCES[state],
        "offline": offline,
        "address": address,
    }


class BadgeSerializer(serializers.Serializer[dict[str, object]]):
    state = serializers.ChoiceField(
        choices=[s.value for s in llm_state.ModelState],
        help_text="offline, ungeprueft, erreichbar, langsam or nicht_erreichbar",
    )
    # A declared field is taken out of the class by DRF's metaclass; mypy only sees the name
    # clash with Field.label.
    label = serializers.CharField(help_text="what the header shows")  # type: ignore[assignment]
    sentence = serializers.CharField(help_text="what the state means, in one German sentence")
    offline = serializers.BooleanField()
    address = serializers.CharField(help_text="model @ host, for staff only; empty otherwise")


class LlmStatusApi(APIView):
    """GET /api/llm/status/: the header badge's state (the chat page polls it)."""

    @extend_schema(responses={200: BadgeSerializer, 401: ErrorSerializer, 403: ErrorSerializer})
    def get(self, request: Request) -> Response:
        return Response(badge(staff=bool(request.user.is_staff), probe=True))


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
