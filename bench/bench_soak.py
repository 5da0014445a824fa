"""Idle soak of the chat WebSocket: ``.venv/bin/python bench/bench_soak.py``.

50 clients connect to a real daphne (Redis channel layer), stay quiet for 60 s — longer than
every timeout between them and Redis (channels_redis' 5 s blocking pop, redis-py's socket
timeout, daphne's 20 s pings) — and then each sends one message at the same moment. It passes
when every message is answered, no socket is closed, and daphne's log holds no traceback.
Bounded: the whole soak ends after idle + TURN_DEADLINE_S at the latest.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
if str(BASE_DIR) not in sys.path:
    sys.path.insert(0, str(BASE_DIR))

from bench import _django  # noqa: E402

CLIENTS = int(os.environ.get("NOVABERG_SOAK_CLIENTS", "50"))
IDLE_S = float(os.environ.get("NOVABERG_SOAK_IDLE_S", "60"))
TURN_DEADLINE_S = 180.0
LOG = BASE_DIR / "var" / "bench-soak-daphne.log"


class Outcome:
    def __init__(self) -> None:
        self.answered = 0
        self.errors: list[str] = []
        self.closes: Counter[str] = Counter()
        self.latencies: list[float] = []


async def _client(
    port: int, session_id: int, cookie: str, i: int, start: asyncio.Event, out: Outcome
) -> None:
    from conversation.tests.socket_client import Closed, Refused, SocketClient

    try:
        client = await SocketClient.open(
            port, f"/ws/sessions/{session_id}/", origin=f"http://127.0.0.1:{port}", cookie=cookie
        )
    except (Refused, OSError) as exc:
        out.closes[f"Handshake: {exc}"] += 1
        return
    try:
        # Quiet until the common start; pings are answered while waiting.
        waiter = asyncio.ensure_future(start.wait())
        while not waiter.done():
            try:
                event = await client.receive_json(timeout=1.0)
            except TimeoutError:
                continue
            out.errors.append(f"Nachricht im Leerlauf: {event}")
        t0 = time.perf_counter()
        await client.send_json({"text": f"Ich war eine Weile still. Bist du noch da? ({i})"})
        events = await client.turn(timeout=TURN_DEADLINE_S)
        if events[-1]["type"] == "done" and events[-1].get("reply"):
            out.answered += 1
            out.latencies.append(time.perf_counter() - t0)
        else:
            out.errors.append(str(events[-1]))
    except Closed as closed:
        out.closes[str(closed.code)] += 1
    except TimeoutError:
        out.closes["no answer (time limit)"] += 1
    finally:
        await client.close()


async def _soak(port: int, clients: list[tuple[int, str]], out: Outcome) -> float:
    start = asyncio.Event()
    tasks = [
        asyncio.ensure_future(_client(port, s, c, i, start, out))
        for i, (s, c) in enumerate(clients)
    ]
    await asyncio.sleep(IDLE_S)
    start.set()
    t0 = time.perf_counter()
    async with asyncio.timeout(TURN_DEADLINE_S + 10):
        await asyncio.gather(*tasks)
    return time.perf_counter() - t0


def run() -> tuple[Outcome, float, int]:
    from django.test import Client

    from conversation.services import session_create
    from tests.factories import UserFactory
    from tests.processes import free_port, start_daphne, stop

    port = free_port()
    proc = start_daphne(port, log_path=LOG, NOVABERG_LLM_BASE_URL="", NOVABERG_LOG_LEVEL="INFO")
    out = Outcome()
    try:
        clients = []
        for i in range(CLIENTS):
            user = UserFactory(username=f"bench-soak-{os.getpid()}-{i}")
            browser = Client()
            browser.force_login(user)
            clients.append(
                (session_create(user=user).pk, f"sessionid={browser.cookies['sessionid'].value}")
            )
        wall = asyncio.run(_soak(port, clients, out))
    finally:
        stop(proc)
    tracebacks = LOG.read_text(errors="replace").count("Traceback")
    return out, wall, tracebacks


def main() -> int:
    _django.setup(redis=True)
    out, wall, tracebacks = run()
    lat = sorted(out.latencies)
    p50 = 1000 * statistics.median(lat) if lat else float("nan")
    p95 = 1000 * lat[int(0.95 * (len(lat) - 1))] if lat else float("nan")
    closes = ", ".join(f"{code}: {n}" for code, n in sorted(out.closes.items())) or "none"
    markdown = "\n".join(
        [
            "### Chat WebSocket: idle soak",
            "",
            f"{CLIENTS} clients against daphne + Redis channel layer on 127.0.0.1 (offline "
            f"backend), {IDLE_S:.0f} s idle, then one message each at the same moment:",
            "",
            "| clients | idle (s) | answered | closes by code | p50 answer (ms) | "
            "p95 answer (ms) | wall after idle (s) | tracebacks in log |",
            "|---:|---:|---:|---|---:|---:|---:|---:|",
            f"| {CLIENTS} | {IDLE_S:.0f} | {out.answered} | {closes} | {p50:.0f} | {p95:.0f} | "
            f"{wall:.1f} | {tracebacks} |",
        ]
    )
    ok = out.answered == CLIENTS and not out.closes and not out.errors and tracebacks == 0
    if not ok:
        print(markdown)
        for error in out.errors[:10]:
            print("  ", error)
        print(f"Soak nicht bestanden; daphne-Log: {LOG}", file=sys.stderr)
        return 1
    _django.write_result("soak", markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
