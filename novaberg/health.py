"""/healthz: each service "ok" or a reason; 503 when a required one is down.

The checks run at once, each in its own thread, and the answer waits ``DEADLINE_S`` for them:
a service that stalls (Redis paused, a database that does not answer) is reported as
``keine Antwort`` within two seconds instead of holding the answer for its own timeouts. Only
loading the embedding model (seconds of CPU work on a cold process, nothing stalled) is waited
for as long as it takes, and only while everything else answered "ok"."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import connection, connections
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation.understanding import model as understanding_model
from novaberg import embeddings, llm, llm_state
from novaberg.api_errors import ErrorSerializer

REQUIRED = ("database", "pgvector", "redis", "worker", "embeddings")
# The whole answer within two seconds (issue 27: a stalled Redis held it for 10.4 s).
DEADLINE_S = 1.8
# Each probe's own limit, shorter than the deadline so that it reports its own reason.
PROBE_TIMEOUT_S = 1.0
NO_ANSWER = f"keine Antwort innerhalb von {DEADLINE_S:.1f} s"


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


def _ping(url: str, timeout_s: float) -> Exception | None:
    """PING the Redis at ``url`` within ``timeout_s``: None when it answered, else why not."""
    import redis

    try:
        client = redis.Redis.from_url(
            url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
        )
    except Exception as exc:  # an unusable URL
        return exc
    try:
        client.ping()
        return None
    except Exception as exc:
        return exc
    finally:
        client.close()


def _redis() -> str:
    failure = _ping(settings.REDIS_URL, PROBE_TIMEOUT_S)
    return "ok" if failure is None else f"nicht erreichbar: {type(failure).__name__}"


def broker_answers(timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Does the broker (Redis) answer a PING within ``timeout_s``? Asked before a request
    sends a task, so that a stalled broker is told in a second, not after Celery's own
    publish retries."""
    return _ping(settings.CELERY_BROKER_URL, timeout_s) is None


def _worker() -> str:
    from novaberg.celery import app

    try:
        replies = app.control.ping(timeout=PROBE_TIMEOUT_S)
    except Exception as exc:
        return f"nicht prüfbar: {type(exc).__name__}"
    return "ok" if replies else "kein Celery-Worker antwortet"


def _llm() -> str:
    gateway = llm.get_gateway()
    if gateway.name == "offline":
        return "ok"
    # llm.ping records its probe in llm_state: the header badge reads it.
    ok = llm.ping(timeout_s=DEADLINE_S - 0.3)
    return "ok" if ok else f"nicht erreichbar: {settings.LLM_BASE_URL}"


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
        # The intent classifier of the person's messages (issue 28) loads here too, so the
        # first message does not wait for it (trained and cached once per machine, seconds).
        understanding_model.model()
        return "ok"
    except Exception as exc:
        return f"nicht verfügbar: {exc}"[:200]


def _in_thread(check: Callable[[], str]) -> Callable[[], str]:
    def run() -> str:
        try:
            return check()
        finally:
            # A pool thread's own database connection; left open it would outlive the check.
            connections.close_all()

    return run


def _run_checks() -> dict[str, str]:
    probes: dict[str, Callable[[], str]] = {
        "database": _database,
        "pgvector": _pgvector,
        "redis": _redis,
        "worker": _worker,
        "llm": _llm,
        "embeddings": _embeddings,
    }
    started = time.monotonic()
    # Not a shared pool: a stalled probe keeps its thread until its own timeout ends it, and
    # must not hold a thread the next /healthz needs. shutdown(wait=False) leaves it to end.
    pool = ThreadPoolExecutor(max_workers=len(probes), thread_name_prefix="healthz")
    try:
        futures: dict[str, Future[str]] = {
            name: pool.submit(_in_thread(probe)) for name, probe in probes.items()
        }
    finally:
        pool.shutdown(wait=False)
    checks: dict[str, str] = {}
    for name, future in futures.items():
        if name == "embeddings":
            continue
        try:
            checks[name] = future.result(timeout=max(0.0, started + DEADLINE_S - time.monotonic()))
        except TimeoutError:
            checks[name] = NO_ANSWER
        except Exception as exc:  # a probe catches its own; this is the last word
            checks[name] = f"nicht prüfbar: {type(exc).__name__}"
    embedding = futures["embeddings"]
    if all(value == "ok" for value in checks.values()):
        # Loading the model is work, not a stall: waited for (the first call of a process).
        checks["embeddings"] = embedding.result()
    elif embedding.done():
        checks["embeddings"] = embedding.result()
    else:
        checks["embeddings"] = "wird noch geladen"
    return checks


def healthz(request: HttpRequest) -> JsonResponse:
    checks = _run_checks()
    # An unreachable configured LLM is down too; the offline backend never is.
    down = [name for name in (*REQUIRED, "llm") if checks[name] != "ok"]
    checks["llm_backend"] = llm.backend_label()
    checks["embeddings_backend"] = embeddings.backend_label()
    return JsonResponse(checks, status=503 if down else 200)
