"""ASGI entry point: HTTP through Django, WebSockets through Channels (served by daphne)."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "novaberg.settings")
django_asgi_app = get_asgi_application()

from typing import Any  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

from asgiref.sync import sync_to_async  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs Django set up first)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import WebsocketDenier  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.exceptions import SuspiciousOperation  # noqa: E402
from django.core.handlers.exception import response_for_exception  # noqa: E402
from django.db import connection  # noqa: E402
from django.http import HttpRequest, HttpResponseBase  # noqa: E402
from django.http.request import split_domain_port, validate_host  # noqa: E402

from conversation import reaper, understanding  # noqa: E402
from conversation.routing import websocket_urlpatterns  # noqa: E402

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_tuple(origin: str) -> tuple[str, str, int] | None:
    """``scheme://host[:port]`` as (scheme, host, port), the default port filled in; None for
    anything that is not a plain http(s) origin (``null``, a path, user info, no host)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username is not None:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _trusted(origin: tuple[str, str, int], pattern: str) -> bool:
    """One entry of DJANGO_CSRF_TRUSTED_ORIGINS, with Django's meaning: exact, or
    ``https://*.example.com`` for every subdomain of example.com."""
    wildcard = "://*." in pattern
    wanted = _origin_tuple(pattern.replace("://*.", "://", 1) if wildcard else pattern)
    if wanted is None:
        return False
    scheme, host, port = origin
    if (scheme, port) != (wanted[0], wanted[2]):
        return False
    return host.endswith("." + wanted[1]) if wildcard else host == wanted[1]


def websocket_origin_allowed(scope: dict[str, Any]) -> bool:
    """Same origin as the request, or one the operator trusts.

    A page on another port or scheme of the same host (``http://127.0.0.1:9999``) is another
    origin: the browser sends the person's cookie with its WebSocket all the same, so the
    host alone (channels' AllowedHostsOriginValidator) let it chat as the person. The socket's
    own origin is the scheme of the connection (ws → http, wss → https) with the Host header,
    which must itself be an allowed host (no DNS rebinding). Behind a TLS-terminating reverse
    proxy the browser's origin differs from what daphne sees: DJANGO_CSRF_TRUSTED_ORIGINS names
    it, as for Django's CSRF check.

    A handshake without Origin is refused: every browser sends one, and the socket
    authenticates by the session cookie only, so a script can send the header it means."""
    headers = {name: value for name, value in scope.get("headers", [])}
    try:
        origin_raw = headers[b"origin"].decode("latin1")
        host = headers[b"host"].decode("latin1")
    except KeyError:
        return False
    origin = _origin_tuple(origin_raw)
    if origin is None:
        return False
    if any(_trusted(origin, pattern) for pattern in settings.CSRF_TRUSTED_ORIGINS):
        return True
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    return origin == _origin_tuple(f"{scheme}://{host}")


class SameOriginValidator:
    """Refuses a WebSocket handshake from a foreign origin (daphne answers 403)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not websocket_origin_allowed(scope):
            # channels' stubs type the scope as their private TypedDict.
            return await WebsocketDenier()(scope, receive, send)  # type: ignore[arg-type]
        return await self.application(scope, receive, send)


class StaticFilesHandler(ASGIStaticFilesHandler):
    """Django's handler answers only Http404 itself: ``/static/..%2f..%2fsecret_key`` raised
    SuspiciousFileOperation out of it, a 500. Now it is Django's answer to a suspicious request:
    400 (the German page) and a line on the ``django.security`` logger."""

    async def get_response_async(self, request: HttpRequest) -> HttpResponseBase:
        try:
            return await super().get_response_async(request)
        except SuspiciousOperation as exc:
            response = await sync_to_async(response_for_exception, thread_sensitive=False)(
                request, exc
            )
            response._resource_closers.append(request.close)  # type: ignore[attr-defined]
            return response


class ReapOnStart:
    """A web process that starts closes the turns a dead one left ``laufend`` (issue 27,
    conversation/reaper.py), before it answers its first request: daphne sends no lifespan
    event, and the first request of a process is its /healthz or the page that would show
    such a turn. The reap runs once per process, in a worker thread."""

    def __init__(self, application: Any) -> None:
        self.application = application
        self.done = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if not self.done:
            # The intent classifier (issue 28) loads beside the first requests, not in front of
            # the first message (seconds when it has to train on a fresh machine).
            understanding.warm_up_in_background()
            await sync_to_async(_reap_at_start, thread_sensitive=False)()
            self.done = True
        return await self.application(scope, receive, send)


def _reap_at_start() -> None:
    try:
        reaper.reap_at_start()
    finally:
        connection.close()  # this worker thread's; the request threads have their own


application = ReapOnStart(
    ProtocolTypeRouter(
        {
            # Static files (chat.js, CSS) are served by the app itself: daphne has no file server.
            "http": StaticFilesHandler(django_asgi_app),
            "websocket": SameOriginValidator(
                # channels' stubs ask for their private URL pattern type; path() gives URLPattern.
                AuthMiddlewareStack(URLRouter(websocket_urlpatterns))  # type: ignore[arg-type]
            ),
        }
    )
)
