"""Failed logins are counted per address and per name, for the login page and the token API.

The counts live in the default cache (Redis, ``settings.CACHES``), so every daphne process sees
the same numbers; ``cache.incr`` is atomic there. Only failures count: a person who logs in is
never slowed down. After too many failures in the window, every further try from that address
or for that name is refused — with the right password too, else the limit would not stop
guessing — until the window ends. A window starts with its first failure (not at the top of
the clock's hour): three failures at 15:59 lock the name until 16:59, not for the 60 seconds
left to 16:00, and no boundary lets twice the allowed guesses through. The limits are DRF
rates (``REST_FRAMEWORK`` ``DEFAULT_THROTTLE_RATES``: ``anmeldung_adresse`` and
``anmeldung_name``, "N/hour" and the like).

The address is ``REMOTE_ADDR``. ``X-Forwarded-For`` is read only when ``NUM_PROXIES`` says how
many proxies stand in front (DRF's rule); trusted blindly, it would let a client pick a fresh
address for every guess.

When the counts cannot be read or written (Redis stalls or is down; the cache's socket timeout
in ``settings.CACHES`` ends the wait within a second), the login is refused with 503 and
``UNAVAILABLE_TEXT``: a limit that cannot be checked would let guessing through unlimited, so
it fails closed. A successful login whose counts cannot be forgiven still succeeds (its
failures stay counted, which only errs on the side of the limit).
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn, TypeVar

from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.authtoken.serializers import AuthTokenSerializer
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle

from novaberg.api_errors import BusyError, ErrorSerializer
from novaberg.parsers import CheckedJSONParser

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

ADDRESS_SCOPE = "anmeldung_adresse"
NAME_SCOPE = "anmeldung_name"
KEY_PREFIX = "anmeldung-fehlversuche"
# App chrome, not Nova: neither "du" nor "Sie".
UNAVAILABLE_TEXT = (
    "Anmeldung gerade nicht möglich: Der Dienst, der Fehlversuche zählt, antwortet nicht. "
    "Bitte in einer Minute erneut versuchen."
)


class ThrottleUnavailable(BusyError):
    """The failure counts could not be read or written: the login is refused (503)."""

    def __init__(self) -> None:
        super().__init__(UNAVAILABLE_TEXT, step="zaehler_nicht_erreichbar")


def _guarded(what: str, call: Callable[[], _T]) -> _T:
    """``call()`` against the cache; any failure of it becomes ``ThrottleUnavailable``."""
    try:
        return call()
    except Exception as exc:
        logger.warning(
            "login throttle: the cache failed (%s)",
            what,
            extra={"outcome": "fehler", "step": "zaehler_nicht_erreichbar"},
            exc_info=True,
        )
        raise ThrottleUnavailable() from exc


@dataclass(frozen=True)
class Attempt:
    address: str
    username: str


def too_many_text(wait_s: float) -> str:
    # App chrome, not Nova: no "du" and no "Sie", the person's form of address is unknown here.
    minutes = max(1, math.ceil(wait_s / 60))
    unit = "einer Minute" if minutes == 1 else f"{minutes} Minuten"
    return f"Zu viele Anmeldeversuche. Bitte in {unit} erneut versuchen."


def _address(request: HttpRequest | Request) -> str:
    if api_settings.NUM_PROXIES is None:
        return str(request.META.get("REMOTE_ADDR") or "")
    return BaseThrottle().get_ident(request)  # type: ignore[arg-type]


def attempt_of(request: HttpRequest | Request, username: str | None = None) -> Attempt:
    if username is None:
        data: Any = request.data if isinstance(request, Request) else request.POST
        value = data.get("username") if hasattr(data, "get") else None
        username = value if isinstance(value, str) else ""
    return Attempt(address=_address(request), username=username.strip().lower())


def _limits(attempt: Attempt) -> list[tuple[str, str, int, int]]:
    """(scope, identity, allowed failures, window seconds) for each limit that applies."""
    rates: dict[str, Any] = dict(api_settings.DEFAULT_THROTTLE_RATES)
    limits = []
    for scope, ident in ((ADDRESS_SCOPE, attempt.address), (NAME_SCOPE, attempt.username)):
        rate = rates.get(scope)
        if not rate or not ident:
            continue
        allowed, window = parse_rate(scope, rate)
        limits.append((scope, ident, allowed, window))
    return limits


_RATE_RE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([smhd])[a-z]*\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_rate(scope: str, rate: str) -> tuple[int, int]:
    """DRF's "N/period" ("10/hour"), also with a count of periods ("10/15min")."""
    match = _RATE_RE.match(rate)
    if match is None or int(match.group(1)) < 1:
        raise ImproperlyConfigured(f"DEFAULT_THROTTLE_RATES[{scope!r}] = {rate!r} is no rate")
    periods = int(match.group(2) or 1)
    return int(match.group(1)), max(1, periods) * _UNIT_S[match.group(3)]


def _keys(scope: str, ident: str, window: int) -> tuple[str, str]:
    """The failure counter of an identity's window and the second that window started; both
    are made by its first failure and expire together at its end."""
    digest = hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    base = f"{KEY_PREFIX}:{scope}:{digest}:{window}"
    return f"{base}:n", f"{base}:start"


def wait_seconds(attempt: Attempt) -> float | None:
    """Seconds until a try is allowed again, or None when it is allowed now."""
    now = time.time()
    waits = []
    for scope, ident, allowed, window in _limits(attempt):
        count_key, start_key = _keys(scope, ident, window)
        stored = _guarded("read", partial(cache.get_many, [count_key, start_key]))
        if int(stored.get(count_key) or 0) >= allowed:
            # No start (it expired a moment before the counter): a whole window, to be safe.
            ends = float(stored.get(start_key) or now) + window
            if ends > now:  # else the window is over and its keys are about to expire
                waits.append(max(1.0, ends - now))
    return max(waits) if waits else None


def record_failure(attempt: Attempt) -> None:
    """Count a failed try; raises ``ThrottleUnavailable`` when the count cannot be stored."""
    now = time.time()
    for scope, ident, _allowed, window in _limits(attempt):
        count_key, start_key = _keys(scope, ident, window)
        _guarded("write", partial(_count, count_key, start_key, now, window))


def _count(count_key: str, start_key: str, now: float, window: int) -> None:
    # add() is a no-op when the key exists (the window runs on); incr() is atomic in Redis.
    cache.add(start_key, now, timeout=window)
    cache.add(count_key, 0, timeout=window)
    try:
        cache.incr(count_key)
    except ValueError:  # expired between add() and incr(): a new window
        cache.add(count_key, 1, timeout=window)


def forget(attempt: Attempt, *, address: bool = False) -> None:
    """A login succeeded: the name's failures are forgiven (the address's only if asked)."""
    for scope, ident, _allowed, window in _limits(attempt):
        if scope == ADDRESS_SCOPE and not address:
            continue
        try:
            cache.delete_many(list(_keys(scope, ident, window)))
        except Exception:
            # The person is logged in already; her old failures stay counted for their window.
            logger.warning(
                "login throttle: failures not forgiven, the cache failed",
                extra={"outcome": "fehler", "step": "zaehler_nicht_erreichbar"},
                exc_info=True,
            )


class LoginThrottle(BaseThrottle):
    """DRF throttle of the token API: refuses while the address or the name is over its limit."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        self._wait = wait_seconds(attempt_of(request))
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class TokenSerializer(serializers.Serializer[dict[str, str]]):
    token = serializers.CharField()


class DetailSerializer(serializers.Serializer[dict[str, str]]):
    detail = serializers.CharField()


class TokenLoginApi(ObtainAuthToken):
    """``POST /api/auth/token/ {username, password} -> {token}`` (DESIGN.md Interfaces), with
    failed tries counted (see the module)."""

    throttle_classes = (LoginThrottle,)
    # ObtainAuthToken's form, multipart and JSON, with the project's JSON parser (its depth
    # limit: 3,000 brackets were a RecursionError's 500 here; novaberg/parsers.py).
    parser_classes = (CheckedJSONParser, FormParser, MultiPartParser)

    @extend_schema(
        request=AuthTokenSerializer,
        responses={
            200: TokenSerializer,
            400: OpenApiResponse(description="Name oder Passwort stimmen nicht."),
            429: DetailSerializer,
            503: OpenApiResponse(
                ErrorSerializer, description="Der Zähler der Fehlversuche antwortet nicht."
            ),
        },
    )
    def post(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        attempt = attempt_of(request)
        if not serializer.is_valid():
            record_failure(attempt)
            raise ValidationError(serializer.errors)
        forget(attempt)
        token, _created = Token.objects.get_or_create(user=serializer.validated_data["user"])
        return Response({"token": token.key})

    def throttled(self, request: Request, wait: float | None) -> NoReturn:
        raise TooManyLogins(wait or 60)


class TooManyLogins(Throttled):
    """429 with one German sentence in minutes; DRF's own would add one in seconds. The
    exception handler still sends ``Retry-After`` from ``wait``."""

    wait: int | None

    def __init__(self, wait_s: float) -> None:
        super().__init__(detail=too_many_text(wait_s))
        self.wait = math.ceil(wait_s)
