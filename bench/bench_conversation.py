"""Conversation benchmarks: ``.venv/bin/python bench/bench_conversation.py``.

1. Time to first token (TTFT) of the full chain against the fake OpenAI-compatible server with a
   fixed latency per call, compared with the same chain without the composer and with a
   responder-only chain (no conversation vector, no composer): seed 003 §3.3 says the composer's
   price is paid on the clock before the first token, and it is measured before it is accepted.
   The person has released bench/corpus/ (indexed by the product's watcher run) and asks the
   labelled set's questions, so the file search inside the chain does real work; the table
   says in how many turns it delivered records.
2. WebSocket turns per second: 100 concurrent clients × 5 turns against a real daphne process
   with the Redis channel layer on 127.0.0.1 (offline backend: the figure is pipeline +
   transport). Every turn is checked: one done frame per message, no turn id twice, and the
   database holds each session's turns exactly once. The server overhead per turn is the
   client's wall time minus the pipeline's own total (``total_ms`` of the done frame). The
   limit beside it is measured in the same run on the same daphne: the same clients sending
   frames the consumer answers at once without a turn (transport only).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import statistics
import struct
import sys
import time
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
if str(BASE_DIR) not in sys.path:
    sys.path.insert(0, str(BASE_DIR))

from bench import _django  # noqa: E402

LATENCY_S = 0.05
TTFT_TURNS = 15
CLIENTS = 100
TURNS_PER_CLIENT = 5


# --- 1. TTFT -------------------------------------------------------------------------------------


def ttft_runs() -> tuple[dict[str, list[int]], dict[str, int], int]:
    from files import calibration

    questions = [
        q.q
        for q in calibration.load_labelled(BASE_DIR / "bench" / "retrieval_set.json")
        if q.relevant
    ]
    with calibration.folder_indexed(
        BASE_DIR / "bench" / "corpus", username=f"bench-ttft-{os.getpid()}"
    ) as indexed:
        ttft, with_records = _ttft_runs(indexed.user, questions)
        files = indexed.counts.get("new", 0)
    return ttft, with_records, files


def _ttft_runs(user: Any, questions: list[str]) -> tuple[dict[str, list[int]], dict[str, int]]:
    from django.conf import settings

    from conversation.pipeline import runner
    from conversation.services import session_create
    from novaberg import embeddings, llm
    from tests.fakes.openai_server import FakeOpenAI

    embeddings.warm_up()
    fake = FakeOpenAI().start()
    fake.latency_s = LATENCY_S
    fake.set_default("Schön, dass du fragst: Das erzähle ich dir gern.")
    settings.LLM_BASE_URL = fake.base_url
    settings.LLM_API_KEY = "bench"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_MAX_RETRIES = 0
    llm.reset_gateway()
    full = list(runner.NODES)
    without_composer = [n for n in full if n.__module__ != "conversation.pipeline.composer"]
    responder_only = [
        n
        for n in without_composer
        if n.__module__ not in {"conversation.pipeline.vector", "conversation.pipeline.composer"}
    ]
    configs = {
        "full chain (vector + composer + responder)": full,
        "without composer (vector + responder)": without_composer,
        "responder only": responder_only,
    }
    out: dict[str, list[int]] = {}
    with_records: dict[str, int] = {}
    try:
        for name, nodes in configs.items():
            runner.NODES[:] = nodes
            session = session_create(user=user)
            values = []
            with_records[name] = 0
            for i in range(TTFT_TURNS):
                result = runner.run_turn(
                    user=user,
                    character=session.character,
                    session=session,
                    text=questions[i % len(questions)],
                )
                assert result.ttft_ms is not None, result
                values.append(result.ttft_ms)
                with_records[name] += bool(result.records)
            out[name] = values
    finally:
        runner.NODES[:] = full
        fake.stop()
    if not any(with_records.values()):
        raise RuntimeError("the file search delivered no record in any turn: no real work measured")
    return out, with_records


# --- 2. WebSocket turns/s ------------------------------------------------------------------------


async def _ws_connect(port: int, path: str, cookie: str) -> tuple[Any, Any]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{port}\r\nCookie: {cookie}\r\n\r\n"
        ).encode()
    )
    status = await reader.readuntil(b"\r\n\r\n")
    if b" 101 " not in status.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"websocket refused: {status[:80]!r}")
    return reader, writer


def _frame(text: str, opcode: int = 0x1) -> bytes:
    return _frame_bytes(text.encode(), opcode)


def _frame_bytes(data: bytes, opcode: int) -> bytes:
    mask = os.urandom(4)
    head = bytes([0x80 | opcode])
    n = len(data)
    if n < 126:
        head += bytes([0x80 | n])
    elif n < 65536:
        head += bytes([0x80 | 126]) + struct.pack(">H", n)
    else:
        head += bytes([0x80 | 127]) + struct.pack(">Q", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


async def _read_frame(reader: Any, writer: Any) -> str:
    """The next text message; pings are answered (daphne pings a client that waits long, and
    closes it when no pong comes), pongs skipped."""
    while True:
        b1, b2 = await reader.readexactly(2)
        n = b2 & 0x7F
        if n == 126:
            (n,) = struct.unpack(">H", await reader.readexactly(2))
        elif n == 127:
            (n,) = struct.unpack(">Q", await reader.readexactly(8))
        data = await reader.readexactly(n)
        opcode = b1 & 0x0F
        if opcode == 0x8:
            code = struct.unpack(">H", data[:2])[0] if len(data) >= 2 else None
            raise RuntimeError(f"websocket closed by server (code {code})")
        if opcode == 0x9:
            writer.write(_frame_bytes(data, 0xA))
            await writer.drain()
            continue
        if opcode == 0xA:
            continue
        return data.decode()


async def _client(
    port: int, session_id: int, cookie: str, latencies: list[float], overheads: list[float]
) -> list[int]:
    """One person's chat: returns the turn ids of the done frames, in order."""
    reader, writer = await _ws_connect(port, f"/ws/sessions/{session_id}/", cookie)
    turn_ids = []
    for i in range(TURNS_PER_CLIENT):
        t0 = time.perf_counter()
        writer.write(_frame(json.dumps({"text": f"Mein Lieblingsort Nummer {i} ist Hamburg."})))
        await writer.drain()
        while True:
            event = json.loads(await _read_frame(reader, writer))
            if event["type"] in {"done", "error"}:
                break
        wall = time.perf_counter() - t0
        latencies.append(wall)
        if event["type"] == "done":
            turn_ids.append(int(event["turn_id"]))
            overheads.append(wall - int(event["total_ms"]) / 1000)
    writer.close()
    return turn_ids


async def _transport_client(port: int, session_id: int, cookie: str, n: int) -> int:
    """Frames the consumer answers at once ("Nachricht ohne Text."): daphne + the socket, no
    turn — the transport limit of the same server in the same run."""
    reader, writer = await _ws_connect(port, f"/ws/sessions/{session_id}/", cookie)
    answered = 0
    for _ in range(n):
        writer.write(_frame(json.dumps({"ohne": "text"})))
        await writer.drain()
        answered += json.loads(await _read_frame(reader, writer))["type"] == "error"
    writer.close()
    return answered


def websocket_throughput() -> dict[str, float]:
    from django.test import Client

    from conversation.models import Turn
    from conversation.services import session_create
    from tests.factories import UserFactory
    from tests.processes import free_port, start_daphne, stop

    port = free_port()
    proc = start_daphne(
        port,
        log_path=BASE_DIR / "var" / "bench-daphne.log",
        NOVABERG_LLM_BASE_URL="",
        NOVABERG_LOG_LEVEL="WARNING",
    )
    try:
        clients = []
        for i in range(CLIENTS):
            user = UserFactory(username=f"bench-ws-{os.getpid()}-{i}")
            browser = Client()
            browser.force_login(user)
            cookie = f"sessionid={browser.cookies['sessionid'].value}"
            clients.append((session_create(user=user).pk, cookie))
        # One warm-up turn loads the embedding model inside daphne before the clock starts.
        warm = session_create(user=UserFactory(username=f"bench-ws-{os.getpid()}-warm"))
        browser = Client()
        browser.force_login(warm.user)
        asyncio.run(
            _client(port, warm.pk, f"sessionid={browser.cookies['sessionid'].value}", [], [])
        )
        latencies: list[float] = []
        overheads: list[float] = []

        async def all_clients() -> list[list[int]]:
            return await asyncio.gather(
                *(_client(port, s, c, latencies, overheads) for s, c in clients)
            )

        t0 = time.perf_counter()
        per_client = asyncio.run(all_clients())
        wall = time.perf_counter() - t0

        async def all_transport() -> list[int]:
            return await asyncio.gather(
                *(_transport_client(port, s, c, TURNS_PER_CLIENT * 4) for s, c in clients)
            )

        t1 = time.perf_counter()
        frames = sum(asyncio.run(all_transport()))
        transport_wall = time.perf_counter() - t1
    finally:
        stop(proc)
    ids = [t for client in per_client for t in client]
    session_ids = [s for s, _ in clients]
    stored_user = Turn.objects.filter(session_id__in=session_ids, role=Turn.Role.USER).count()
    stored_reply = Turn.objects.filter(session_id__in=session_ids, role=Turn.Role.ASSISTANT).count()
    expected = CLIENTS * TURNS_PER_CLIENT
    dropped = expected - len(ids)
    doubled = len(ids) - len(set(ids))
    if dropped or doubled or stored_user != expected or stored_reply != expected:
        raise SystemExit(
            f"bench_conversation: FEHLER: {dropped} Züge ohne Antwort, {doubled} doppelt, "
            f"{stored_user} Nachrichten und {stored_reply} Antworten gespeichert "
            f"(erwartet je {expected})"
        )
    latencies.sort()
    overheads.sort()
    return {
        "turns": len(ids),
        "dropped": dropped,
        "doubled": doubled,
        "wall_s": wall,
        "turns_per_s": len(ids) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "overhead_p50_ms": 1000 * statistics.median(overheads),
        "overhead_p95_ms": 1000 * overheads[int(0.95 * (len(overheads) - 1))],
        "transport_frames_per_s": frames / transport_wall,
    }


def main() -> None:
    _django.setup(redis=True)
    ttft, with_records, files = ttft_runs()
    ws = websocket_throughput()
    base = statistics.median(ttft["responder only"])
    rows = [
        f"| {name} | {statistics.median(v)} | {max(v)} | {statistics.median(v) / base:.2f} | "
        f"{with_records[name]} / {len(v)} |"
        for name, v in ttft.items()
    ]
    full = statistics.median(ttft["full chain (vector + composer + responder)"])
    without = statistics.median(ttft["without composer (vector + responder)"])
    markdown = "\n".join(
        [
            "### Conversation: time to first token and WebSocket throughput",
            "",
            f"TTFT over {TTFT_TURNS} turns each, fake OpenAI-compatible server with a fixed "
            f"latency of {int(LATENCY_S * 1000)} ms per call (embedding, memory and file search "
            f"included in every chain). The person has released bench/corpus/ ({files} notes, "
            "indexed by the product's watcher run) and asks the labelled set's questions:",
            "",
            "| chain | TTFT median (ms) | TTFT max (ms) | ratio to responder-only | "
            "turns with file records |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Composer stage alone: +{full - without} ms TTFT "
            f"(ratio full / without composer = {full / without:.2f}).",
            "",
            f"WebSocket: {CLIENTS} concurrent clients × {TURNS_PER_CLIENT} turns against one "
            "daphne + Redis channel layer on 127.0.0.1, offline backend. Dropped and doubled are "
            "counted from the done frames and the stored turns; the server overhead is a turn's "
            "wall time at the client minus the pipeline's own total; the limit is the same "
            "clients' frames that the consumer answers without a turn, on the same daphne:",
            "",
            "| turns | dropped | doubled | wall (s) | turns/s | p50 turn (ms) | p95 turn (ms) | "
            "overhead p50 (ms) | overhead p95 (ms) | limit: answered frames/s | "
            "turns/s ÷ limit |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {ws['turns']:.0f} | {ws['dropped']:.0f} | {ws['doubled']:.0f} | "
            f"{ws['wall_s']:.2f} | {ws['turns_per_s']:.1f} | {ws['p50_ms']:.0f} | "
            f"{ws['p95_ms']:.0f} | {ws['overhead_p50_ms']:.0f} | {ws['overhead_p95_ms']:.0f} | "
            f"{ws['transport_frames_per_s']:.0f} | "
            f"{ws['turns_per_s'] / ws['transport_frames_per_s']:.3f} |",
        ]
    )
    _django.write_result("conversation", markdown)


if __name__ == "__main__":
    main()
