"""A minimal RFC 6455 client over asyncio streams, for tests and benchmarks against a real daphne.

A browser cannot be told which Origin to send or to send a binary frame; this client can. It
answers the server's pings (daphne pings every 20 s and drops a socket that does not answer,
which an idle test would otherwise mistake for the server's fault) and reports a close frame
with its code.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import struct
from typing import Any

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


class Refused(Exception):
    """The handshake was answered with another status than 101."""

    def __init__(self, status: int) -> None:
        super().__init__(f"websocket refused with HTTP {status}")
        self.status = status


class Closed(Exception):
    """The server closed the socket (``code`` None: the TCP connection ended without a close
    frame)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"websocket closed by the server (code {code})")
        self.code = code


class SocketClient:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(
        cls,
        port: int,
        path: str,
        *,
        origin: str | None,
        cookie: str = "",
        host: str | None = None,
    ) -> SocketClient:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [
            f"GET {path} HTTP/1.1",
            f"Host: {host or f'127.0.0.1:{port}'}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {key}",
            "Sec-WebSocket-Version: 13",
        ]
        if origin is not None:
            lines.append(f"Origin: {origin}")
        if cookie:
            lines.append(f"Cookie: {cookie}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=30)
        status = int(head.split(b"\r\n", 1)[0].split()[1])
        if status != 101:
            writer.close()
            raise Refused(status)
        return cls(reader, writer)

    async def _write(self, opcode: int, data: bytes) -> None:
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 0x80 | 127, n)
        self.writer.write(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        await self.writer.drain()

    async def send_text(self, text: str) -> None:
        await self._write(TEXT, text.encode())

    async def send_json(self, content: Any) -> None:
        await self.send_text(json.dumps(content))

    async def send_binary(self, data: bytes) -> None:
        await self._write(BINARY, data)

    async def _read_frame(self) -> tuple[int, bytes]:
        try:
            b1, b2 = await self.reader.readexactly(2)
            n = b2 & 0x7F
            if n == 126:
                (n,) = struct.unpack(">H", await self.reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack(">Q", await self.reader.readexactly(8))
            return b1 & 0x0F, await self.reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            raise Closed(None) from exc

    async def receive_json(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next text message as JSON; pings are answered on the way."""
        async with asyncio.timeout(timeout):
            while True:
                opcode, data = await self._read_frame()
                if opcode == PING:
                    await self._write(PONG, data)
                elif opcode == CLOSE:
                    raise Closed(struct.unpack(">H", data[:2])[0] if len(data) >= 2 else None)
                elif opcode == TEXT:
                    event: dict[str, Any] = json.loads(data.decode())
                    return event

    async def turn(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Every event of one turn, up to its "done" or "error"."""
        events: list[dict[str, Any]] = []
        while True:
            events.append(await self.receive_json(timeout))
            if events[-1]["type"] in {"done", "error"}:
                return events

    async def idle(self, seconds: float) -> None:
        """Stay quiet for ``seconds``, answering pings; a close or a message ends it loudly."""
        try:
            event = await self.receive_json(seconds)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected message while idle: {event}")

    async def close(self) -> None:
        try:
            await self._write(CLOSE, struct.pack(">H", 1000))
        except ConnectionError:
            pass
        self.writer.close()
