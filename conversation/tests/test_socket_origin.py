"""The WebSocket origin rule (novaberg/asgi.py): same origin as the request — scheme, host and
port — or one of DJANGO_CSRF_TRUSTED_ORIGINS; never a missing or opaque Origin.

The whole handshake through daphne is in test_socket_daphne.py; this table covers the cases a
local daphne cannot show (TLS, a reverse proxy, default ports)."""

from __future__ import annotations

from typing import Any

import pytest

from novaberg.asgi import websocket_origin_allowed


def scope(origin: str | None, host: str | None, scheme: str = "ws") -> dict[str, Any]:
    headers = []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    return {"type": "websocket", "scheme": scheme, "headers": headers}


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        pytest.param("http://127.0.0.1:8000", "127.0.0.1:8000", "ws", True, id="same-origin"),
        pytest.param("http://localhost", "localhost:80", "ws", True, id="default-port-http"),
        pytest.param("https://localhost", "localhost", "wss", True, id="default-port-https"),
        pytest.param("HTTP://LOCALHOST:8000", "localhost:8000", "ws", True, id="case"),
        pytest.param("http://127.0.0.1:9999", "127.0.0.1:8000", "ws", False, id="foreign-port"),
        pytest.param("https://127.0.0.1:8000", "127.0.0.1:8000", "ws", False, id="https-on-ws"),
        pytest.param("http://localhost", "localhost", "wss", False, id="http-on-wss"),
        pytest.param("http://localhost:8000", "127.0.0.1:8000", "ws", False, id="other-name"),
        pytest.param("http://evil.example:8000", "evil.example:8000", "ws", False, id="rebind"),
        pytest.param("null", "127.0.0.1:8000", "ws", False, id="opaque"),
        pytest.param("file://", "127.0.0.1:8000", "ws", False, id="file"),
        pytest.param("http://a@127.0.0.1:8000", "127.0.0.1:8000", "ws", False, id="userinfo"),
        pytest.param("http://127.0.0.1:99999", "127.0.0.1:8000", "ws", False, id="bad-port"),
        pytest.param(None, "127.0.0.1:8000", "ws", False, id="no-origin"),
        pytest.param("http://127.0.0.1:8000", None, "ws", False, id="no-host"),
    ],
)
def test_origin_table(origin: str | None, host: str | None, scheme: str, allowed: bool) -> None:
    assert websocket_origin_allowed(scope(origin, host, scheme)) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        pytest.param("https://chat.example.org", True, id="trusted"),
        pytest.param("https://chat.example.org:443", True, id="trusted-default-port"),
        pytest.param("http://chat.example.org", False, id="trusted-host-wrong-scheme"),
        pytest.param("https://chat.example.org:8443", False, id="trusted-host-wrong-port"),
        pytest.param("https://eu.nova.example.net", True, id="wildcard-subdomain"),
        pytest.param("https://nova.example.net.evil", False, id="wildcard-suffix-trick"),
        pytest.param("https://evilnova.example.net", False, id="wildcard-not-a-subdomain"),
    ],
)
def test_a_reverse_proxys_origin_is_trusted_when_configured(
    settings: Any, origin: str, allowed: bool
) -> None:
    # Daphne behind a TLS proxy sees ws://internal:8000 while the browser is on https://….
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.org", "https://*.nova.example.net"]
    assert websocket_origin_allowed(scope(origin, "internal:8000")) is allowed
