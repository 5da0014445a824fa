"""Conversation benchmarks: ``.venv/bin/python bench/bench_conversation.py``.

1. Time to first token (TTFT) of the full chain against the fake OpenAI-compatible server with a
   fixed latency per call, compared with the same chain without the composer and with a
   responder-only chain (no conversation vector, no composer): seed 003 §3.3 says the composer's
   price is paid on the clock before the first token, and it is measured before it is accepted.
   The person has released bench/corpus/ (indexed by the product's watcher run) and asks the
   labelled set's questions, so the file search inside the chain does real work; the table
   says in how many turns it delivered records. The chains run interleaved, turn by turn in a
   rotating order, so a busy moment falls on all of them alike; the load average is printed.
   The full chain also runs with its overlap switched off (issue 16: the conversation
   vector's model call beside memory recall and retrieval), so the table shows what it saves.
   ``BENCH_CONVERSATION_ONLY=ttft`` runs this section alone and writes no result file.
2. WebSocket turns per second: 100 concurrent clients × 5 turns against a real daphne process
   with the Redis channel layer on 127.0.0.1 (offline backend: the figure is pipeline +
   transport). Every turn is checked: one done frame per message, no turn id twice, and the
   database holds each session's turns exactly once. The server overhead per turn is the
   client's wall time minus the pipeline's own total (``total_ms`` of the done frame). The
   limit beside it is measured in the same run on the same daphne: the same clients sending
   frames the consumer answers at once without a turn (transport only).

Both figures also go to bench/results/conversation.figures.json (``_django.write_figures``):
the full chain's TTFT against the responder-only TTFT of the same run (target ≤ 2.0 ×), and the
WebSocket run against the transport limit it measured.
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
# Enough interleaved turns that a busy moment of a shared 2-core machine does not decide the
# medians (``BENCH_TTFT_TURNS`` overrides it).
TTFT_TURNS = int(os.environ.get("BENCH_TTFT_TURNS", "25"))
CLIENTS = 100
TURNS_PER_CLIENT = 5
HANDSHAKES_AT_ONCE = 10
REPLY_S = 120.0  # a turn's end not seen by then is a dropped turn


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


FULL = "full chain (vector + composer + responder)"
SEQUENTIAL = "full chain, nothing overlapped"
WITHOUT_COMPOSER = "without composer (vector + responder)"
RESPONDER_ONLY = "responder only"


def _chains(full: list[Any]) -> dict[str, list[Any]]:
    """The chains measured, as node lists of the product's own runner.NODES. The sequential
    chain is the same full chain with the overlap switched off (without ``vector.start`` the
    vector's model call starts after retrieval, as before issue 16)."""
    from conversation.pipeline import vector

    vector_module = "conversation.pipeline.vector"
    starter = getattr(vector, "start", None)
    composer_module = "conversation.pipeline.composer"
    without_composer = [n for n in full if n.__module__ != composer_module]
    chains = {
        FULL: full,
        SEQUENTIAL: [n for n in full if n is not starter],
        WITHOUT_COMPOSER: without_composer,
        RESPONDER_ONLY: [n for n in without_composer if n.__module__ != vector_module],
    }
    if chains[SEQUENTIAL] == full:
        del chains[SEQUENTIAL]
    return chains


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
    configs = _chains(full)
    out: dict[str, list[int]] = {name: [] for name in configs}
    with_records: dict[str, int] = dict.fromkeys(configs, 0)
    sessions = {name: session_create(user=user) for name in configs}
    names = list(configs)
    try:
        # Interleaved: turn i of every chain runs before turn i + 1 of any, in an order that
        # rotates, so a busy moment of the machine falls on all chains alike. One warm-up turn
        # per chain (i = -1: connections, caches) is not counted.
        for i in range(-1, TTFT_TURNS):
            shift = max(i, 0) % len(names)
            for name in names[shift:] + names[:shift]:
                runner.NODES[:] = configs[name]
                session = sessions[name]
                result = runner.run_turn(
                    user=user,
                    character=session.character,
                    session=session,
                    text=questions[max(i, 0) % len(questions)],
                )
                assert result.ttft_ms is not None, result
                if i < 0:
                    continue
                out[name].append(result.ttft_ms)
                with_records[name] += bool(result.records)
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


async def _connect_all(
    port: int, clients: list[tuple[int, str]], handshakes: list[float]
) -> list[tuple[Any, Any]]:
    """Every client's socket, open before the first turn is sent. At most HANDSHAKES_AT_ONCE
    handshakes are in flight: daphne closes a socket whose consumer has not accepted it within
    its connect timeout (5 s), and 100 handshakes in the same instant on a busy 2-core machine
    exceed it — people do not all connect in the same millisecond, they chat at the same time."""
    gate = asyncio.Semaphore(HANDSHAKES_AT_ONCE)

    async def one(session_id: int, cookie: str) -> tuple[Any, Any]:
        async with gate:
            t0 = time.perf_counter()
            opened = await _ws_connect(port, f"/ws/sessions/{session_id}/", cookie)
            handshakes.append(time.perf_counter() - t0)
            return opened

    return await asyncio.gather(*(one(s, c) for s, c in clients))


async def _client(
    socket: tuple[Any, Any], latencies: list[float], overheads: list[float]
) -> list[int]:
    """One person's chat on an open socket: returns the turn ids of the done frames, in order."""
    reader, writer = socket
    turn_ids = []
    for i in range(TURNS_PER_CLIENT):
        t0 = time.perf_counter()
        writer.write(_frame(json.dumps({"text": f"Mein Lieblingsort Nummer {i} ist Hamburg."})))
        await writer.drain()
        try:
            while True:
                event = json.loads(await asyncio.wait_for(_read_frame(reader, writer), REPLY_S))
                if event["type"] in {"done", "error"}:
                    break
        except TimeoutError:
            # No end of this turn within REPLY_S: counted as dropped (the turns the client
            # did not get to send as well), instead of waiting forever.
            break
        wall = time.perf_counter() - t0
        latencies.append(wall)
        if event["type"] == "done":
            turn_ids.append(int(event["turn_id"]))
            overheads.append(wall - int(event["total_ms"]) / 1000)
    writer.close()
    return turn_ids


async def _transport_client(socket: tuple[Any, Any], n: int) -> int:
    """Frames the consumer answers at once ("Nachricht ohne Text."): daphne + the socket, no
    turn — the transport limit of the same server in the same run."""
    reader, writer = socket
    answered = 0
    for _ in range(n):
        writer.write(_frame(json.dumps({"ohne": "text"})))
        await writer.drain()
        try:
            frame = await asyncio.wait_for(_read_frame(reader, writer), REPLY_S)
        except TimeoutError:
            break
        answered += json.loads(frame)["type"] == "error"
    writer.close()
    return answered


def websocket_throughput() -> tuple[str, dict[str, float]]:
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
        warm_cookie = f"sessionid={browser.cookies['sessionid'].value}"

        async def warm_up() -> None:
            await _client(await _ws_connect(port, f"/ws/sessions/{warm.pk}/", warm_cookie), [], [])

        asyncio.run(warm_up())
        latencies: list[float] = []
        overheads: list[float] = []
        handshakes: list[float] = []
        timing: dict[str, float] = {}

        async def all_clients() -> list[list[int]]:
            sockets = await _connect_all(port, clients, handshakes)
            t0 = time.perf_counter()  # all 100 connected: from here they chat at once
            done = await asyncio.gather(*(_client(s, latencies, overheads) for s in sockets))
            timing["wall"] = time.perf_counter() - t0
            return done

        per_client = asyncio.run(all_clients())
        wall = timing["wall"]

        async def all_transport() -> int:
            sockets = await _connect_all(port, clients, [])
            t1 = time.perf_counter()
            answered = await asyncio.gather(
                *(_transport_client(s, TURNS_PER_CLIENT * 4) for s in sockets)
            )
            timing["transport"] = time.perf_counter() - t1
            return sum(answered)

        frames = asyncio.run(all_transport())
        transport_wall = timing["transport"]
    finally:
        stop(proc)
    ids = [t for client in per_client for t in client]
    session_ids = [s for s, _ in clients]
    stored_user = Turn.objects.filter(session_id__in=session_ids, role=Turn.Role.USER).count()
    stored_reply = Turn.objects.filter(session_id__in=session_ids, role=Turn.Role.ASSISTANT).count()
    expected = CLIENTS * TURNS_PER_CLIENT
    dropped = expected - len(ids)
    doubled = len(ids) - len(set(ids))
    failure = ""
    if dropped or doubled or stored_user != expected or stored_reply != expected:
        # Measured and written as it is (the figure's target is then not met), then the
        # benchmark ends with an error.
        failure = (
            f"bench_conversation: FEHLER: {dropped} Züge ohne Antwort, {doubled} doppelt, "
            f"{stored_user} Nachrichten und {stored_reply} Antworten gespeichert "
            f"(erwartet je {expected})"
        )
    latencies.sort()
    overheads.sort()
    overheads = overheads or [float("nan")]
    return failure, {
        "turns": len(ids),
        "stored": stored_user,
        "dropped": dropped,
        "doubled": doubled,
        "wall_s": wall,
        "turns_per_s": len(ids) / wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "overhead_p50_ms": 1000 * statistics.median(overheads),
        "overhead_p95_ms": 1000 * overheads[int(0.95 * (len(overheads) - 1))],
        "transport_frames_per_s": frames / transport_wall,
        "handshake_p95_ms": 1000 * sorted(handshakes)[int(0.95 * (len(handshakes) - 1))],
    }


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min) / {five:.2f} (5 min)"


def ttft_markdown(
    ttft: dict[str, list[int]], with_records: dict[str, int], files: int, load: str
) -> tuple[str, float, float]:
    """The TTFT table; returns (markdown, full-chain median, responder-only median)."""
    base = statistics.median(ttft[RESPONDER_ONLY])
    rows = [
        f"| {name} | {statistics.median(v):.0f} | {max(v)} | {statistics.median(v) / base:.2f} | "
        f"{with_records[name]} / {len(v)} |"
        for name, v in ttft.items()
    ]
    full = statistics.median(ttft[FULL])
    without = statistics.median(ttft[WITHOUT_COMPOSER])
    # Turn i of every chain ran at nearly the same moment with the same question: the median of
    # the per-turn ratios is the steadier figure on a busy machine.
    paired = statistics.median(f / r for f, r in zip(ttft[FULL], ttft[RESPONDER_ONLY], strict=True))
    lines = [
        f"TTFT over {TTFT_TURNS} turns per chain, the chains interleaved turn by turn (load "
        f"average {load}), fake OpenAI-compatible server with a fixed latency of "
        f"{int(LATENCY_S * 1000)} ms per call (embedding, memory and file search included in "
        f"every chain). The person has released bench/corpus/ ({files} notes, indexed by the "
        "product's watcher run) and asks the labelled set's questions. The conversation "
        "vector's model call runs beside memory recall and file retrieval; the composer still "
        "finishes before the responder starts (seed 003):",
        "",
        "| chain | TTFT median (ms) | TTFT max (ms) | ratio to responder-only | "
        "turns with file records |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Full chain / responder only: {full / base:.2f} (ratio of the medians), "
        f"{paired:.2f} (median of the per-turn ratios).",
        "",
        f"Composer stage alone: +{full - without:.0f} ms TTFT "
        f"(ratio full / without composer = {full / without:.2f}).",
    ]
    if SEQUENTIAL in ttft:
        sequential = statistics.median(ttft[SEQUENTIAL])
        saved = statistics.median(s - f for s, f in zip(ttft[SEQUENTIAL], ttft[FULL], strict=True))
        lines += [
            "",
            f"Overlap: the same full chain run node after node has a median TTFT of "
            f"{sequential:.0f} ms (ratio to responder-only {sequential / base:.2f}); per turn "
            f"the overlap saves a median of {saved:.0f} ms.",
        ]
    return "\n".join(lines), full, base


def main() -> None:
    """``BENCH_CONVERSATION_ONLY=ttft`` runs the TTFT section alone (while iterating); it prints
    its table and writes no result file (the result holds both sections)."""
    only = os.environ.get("BENCH_CONVERSATION_ONLY", "").strip().lower()
    if only not in {"", "ttft"}:
        raise SystemExit(f"BENCH_CONVERSATION_ONLY={only!r}: erlaubt ist nur 'ttft'")
    _django.setup(redis=True)
    load_before = _load()
    ttft, with_records, files = ttft_runs()
    load_ttft = f"{load_before} before, {_load()} after"
    ttft_text, full, base = ttft_markdown(ttft, with_records, files, load_ttft)
    if only == "ttft":
        print(ttft_text)
        print(f"ratio full / responder only = {full / base:.2f}")
        return
    failure, ws = websocket_throughput()
    markdown = "\n".join(
        [
            "### Conversation: time to first token and WebSocket throughput",
            "",
            ttft_text,
            "",
            f"WebSocket: {CLIENTS} concurrent clients × {TURNS_PER_CLIENT} turns against one "
            "daphne + Redis channel layer on 127.0.0.1, offline backend; all sockets are open "
            f"before the first turn (at most {HANDSHAKES_AT_ONCE} handshakes at once, handshake "
            f"p95 {ws['handshake_p95_ms']:.0f} ms). Dropped and doubled are "
            "counted from the done frames and the stored turns; the server overhead is a turn's "
            "wall time at the client minus the pipeline's own total; the limit is the same "
            "clients' frames that the consumer answers without a turn, on the same daphne:",
            "",
            "| turns | stored | dropped | doubled | wall (s) | turns/s | p50 turn (ms) | "
            "p95 turn (ms) | overhead p50 (ms) | overhead p95 (ms) | limit: answered frames/s | "
            "turns/s ÷ limit |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {ws['turns']:.0f} | {ws['stored']:.0f} | {ws['dropped']:.0f} | "
            f"{ws['doubled']:.0f} | {ws['wall_s']:.2f} | {ws['turns_per_s']:.1f} | "
            f"{ws['p50_ms']:.0f} | {ws['p95_ms']:.0f} | {ws['overhead_p50_ms']:.0f} | "
            f"{ws['overhead_p95_ms']:.0f} | {ws['transport_frames_per_s']:.0f} | "
            f"{ws['turns_per_s'] / ws['transport_frames_per_s']:.3f} |",
        ]
    )
    _django.write_result("conversation", markdown)
    expected = CLIENTS * TURNS_PER_CLIENT
    _django.write_figures(
        "conversation",
        [
            {
                "figure": "time to first token, whole chain vs responder only "
                f"(fake server, {int(LATENCY_S * 1000)} ms per call)",
                "value": float(full),
                "unit": "ms TTFT median",
                "limit": float(base),
                "limit_label": "responder-only TTFT median, same run, interleaved",
                "ratio": full / base,
                "target": "≤ 2.0 ×",
                "met": full / base <= 2.0,
                "load": load_ttft,
            },
            {
                "figure": f"WebSocket chat, {CLIENTS} clients × {TURNS_PER_CLIENT} turns",
                "value": float(ws["turns_per_s"]),
                "unit": "turns/s",
                "limit": float(ws["transport_frames_per_s"]),
                "limit_label": "frames/s the same daphne answers without a turn (transport)",
                "ratio": ws["turns_per_s"] / ws["transport_frames_per_s"],
                "target": f"{CLIENTS} × {TURNS_PER_CLIENT}, none dropped or doubled, "
                "overhead p95 reported",
                "met": ws["stored"] == expected and ws["dropped"] == 0 and ws["doubled"] == 0,
                "stored": ws["stored"],
                "dropped": ws["dropped"],
                "doubled": ws["doubled"],
                "overhead_p50_ms": ws["overhead_p50_ms"],
                "overhead_p95_ms": ws["overhead_p95_ms"],
            },
        ],
    )
    if failure:
        raise SystemExit(failure)


if __name__ == "__main__":
    main()
