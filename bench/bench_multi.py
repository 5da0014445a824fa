"""More than one machine: ``.venv/bin/python bench/bench_multi.py`` (issue 16).

Two daphne instances, two Celery workers (solo pool) and one beat, all real processes of the
project, against the same PostgreSQL and Redis (the embedded ones ``make bench`` starts; the
stack's broker is a Redis database of its own, so no other worker takes its tasks). The process
helpers are the multi-instance test's (``tests.processes.Stack``). Three scenarios, each checked:

1. Chats on both web instances at once: sessions driven from both instances by the same person
   at the same time, and sessions of their own on either instance. Turns/s and the p50/p95
   turn time at the client; every turn answered once (no turn id twice) and stored once, and
   every session's turns in order (message, its reply, message …; each client's messages in
   the order it sent them). Beside it, in the same run and interleaved, the same clients
   against one web instance: the anchor the two-instance figure is read against.
2. Two roots indexed while both workers run (each root queued twice, so the second message
   meets the first run's advisory lock): files/s from queueing to both runs done; every index
   row once; each run received by exactly one worker and no two runs of one root running at
   once. Anchor in the same run, interleaved: one root of the same size on one worker.
3. A worker SIGKILLed in the middle of a run: beat's reaper finds the stopped heartbeat, queues
   the root again, the other worker finishes it. Time to recovery = from the kill to the
   finished run; the bound beside it is the heartbeat timeout + one reaper period + the files
   still missing at one worker's rate of scenario 2 (the heartbeat timeout is shortened for the
   benchmark and stated in the table).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
if str(BASE_DIR) not in sys.path:
    sys.path.insert(0, str(BASE_DIR))

from bench import _django  # noqa: E402

# The stack's broker and channel layer: a Redis database no other benchmark or worker reads.
REDIS_DB = "8"
USER_PREFIX = "bench-multi-"
SHARED_SESSIONS = 2  # each driven by two clients at once, one on each web instance
OWN_SESSIONS = 4  # one client each, alternating between the instances
TURNS_PER_CLIENT = 3
CHAT_ROUNDS = 2  # per configuration, interleaved
INDEX_FILES = 30  # per root
INDEX_ROUNDS = 2  # per configuration, interleaved
KILL_FILES = 80
KILL_AT_ROWS = 5
# Shortened for the benchmark (production: 45 s and 15 s); stated in the table.
STALE_AFTER_S = 4.0
REAP_EVERY_S = 1.0
# Five Python processes importing Django and the embedding runtime at once on 2 busy cores.
START_TIMEOUT_S = 240.0
WAIT_S = 180.0


class BenchError(SystemExit):
    def __init__(self, message: str) -> None:
        super().__init__(f"bench_multi: FEHLER: {message}")


def _wait(predicate: Callable[[], bool], what: str, stack: Any, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            print(stack.logs(), file=sys.stderr)
            raise BenchError(what)
        time.sleep(0.05)


# --- 1. chats ------------------------------------------------------------------------------------


@dataclass
class ChatRound:
    wall_s: float
    latencies: list[float]
    turn_ids: list[int]
    expected: int
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    problems: list[str] = field(default_factory=list)


TURN_TIMEOUT_S = 60.0


async def _client(
    port: int,
    session_id: int,
    cookie: str,
    label: str,
    latencies: list[float],
    turns: int,
    unanswered: list[str],
) -> list[int]:
    """One person's chat; a message without its "done" within TURN_TIMEOUT_S is counted in
    ``unanswered`` (the client gives up on that socket, as a person would reload)."""
    from conversation.tests.socket_client import Closed, SocketClient

    client = await SocketClient.open(
        port, f"/ws/sessions/{session_id}/", origin=f"http://127.0.0.1:{port}", cookie=cookie
    )
    ids = []
    try:
        for i in range(turns):
            t0 = time.perf_counter()
            await client.send_json({"text": f"Erzähl mir etwas Schönes ({label} {i})."})
            try:
                events = await client.turn(timeout=TURN_TIMEOUT_S)
            except (TimeoutError, Closed) as exc:
                unanswered.append(f"{label} {i} (Sitzung {session_id}, Port {port}): {exc!r}")
                break
            latencies.append(time.perf_counter() - t0)
            if events[-1]["type"] == "done":
                ids.append(int(events[-1]["turn_id"]))
            else:
                unanswered.append(f"{label} {i} (Sitzung {session_id}): {events[-1]}")
    finally:
        await client.close()
    return ids


def _cookie(user: Any) -> str:
    from django.test import Client

    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}"


def chat_round(
    ports: list[int],
    tag: str,
    *,
    shared: int = SHARED_SESSIONS,
    own: int = OWN_SESSIONS,
    turns: int = TURNS_PER_CLIENT,
) -> ChatRound:
    """One round: ``shared`` sessions each from two clients at once (on the two ports, or both
    on the one port), ``own`` sessions of their own alternating between the ports."""
    from django.contrib.auth import get_user_model

    from conversation.models import Turn
    from conversation.services import session_create

    users = get_user_model().objects
    jobs: list[tuple[int, int, str, str]] = []
    sessions: dict[int, list[str]] = {}  # session id -> labels of its clients
    for s in range(shared):
        user = users.create(username=f"{USER_PREFIX}{os.getpid()}-{tag}-geteilt{s}")
        session = session_create(user=user)
        cookie = _cookie(user)
        labels = [f"{tag} geteilt{s} {side}" for side in ("A", "B")]
        sessions[session.pk] = labels
        for i, label in enumerate(labels):
            jobs.append((ports[i % len(ports)], session.pk, cookie, label))
    for s in range(own):
        user = users.create(username=f"{USER_PREFIX}{os.getpid()}-{tag}-eigen{s}")
        session = session_create(user=user)
        label = f"{tag} eigen{s}"
        sessions[session.pk] = [label]
        jobs.append((ports[s % len(ports)], session.pk, _cookie(user), label))
    latencies: list[float] = []
    unanswered: list[str] = []

    async def everyone() -> list[list[int]]:
        return list(
            await asyncio.gather(*(_client(*job, latencies, turns, unanswered) for job in jobs))
        )

    t0 = time.perf_counter()
    per_client = asyncio.run(everyone())
    wall = time.perf_counter() - t0
    ids = [i for client in per_client for i in client]
    result = ChatRound(wall, latencies, ids, expected=len(jobs) * turns)
    result.duplicated = len(ids) - len(set(ids))
    result.problems.extend(f"ohne Antwort: {u}" for u in unanswered)
    stored_messages = 0
    for session_id, labels in sessions.items():
        stored = list(Turn.objects.filter(session_id=session_id).order_by("created_at", "id"))
        messages = [t for t in stored if t.role == Turn.Role.USER]
        stored_messages += len({t.text for t in messages})
        result.duplicated += len(messages) - len({t.text for t in messages})
        in_order = len(stored) % 2 == 0 and all(
            m.role == Turn.Role.USER and r.role == Turn.Role.ASSISTANT and r.reply_to_id == m.pk
            for m, r in zip(stored[::2], stored[1::2], strict=True)
        )
        for label in labels:  # each client's messages in the order it sent them
            sent = [t.text for t in messages if f"({label} " in t.text]
            expected = [f"Erzähl mir etwas Schönes ({label} {i})." for i in range(turns)]
            in_order = in_order and sent == expected
        if not in_order:
            result.out_of_order += 1
            result.problems.append(f"Sitzung {session_id}: {[(t.role, t.text) for t in stored]}")
    # Lost: a message the client sent that was not answered (no done) or not stored once.
    result.lost = result.expected - min(stored_messages, len(set(ids)))
    return result


def chats(ports: list[int]) -> dict[str, list[ChatRound]]:
    # One warm-up turn per instance before the clock starts (the first turn of a process pays
    # for lazy imports).
    rounds: dict[str, list[ChatRound]] = {"two": [], "one": []}
    for port in ports:
        chat_round([port], f"warm{port}", shared=0, own=1, turns=1)
    for r in range(CHAT_ROUNDS):
        order = ("two", "one") if r % 2 == 0 else ("one", "two")
        for config in order:
            used = ports if config == "two" else ports[:1]
            rounds[config].append(chat_round(used, f"{config}{r}"))
    return rounds


# --- 2. two roots on two workers -----------------------------------------------------------------


def _corpus(base: Path, topic: str, n: int) -> Path:
    for i in range(n):
        path = base / f"{topic}{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"# {topic} {i}\n\nNotiz {i} über {topic}, Wege und Pläne für den Sommer.\n\n"
            f"## Einzelheiten\n\nPunkt {i}: was zu tun bleibt und wer hilft.\n",
            encoding="utf-8",
        )
    return base


@dataclass
class IndexRound:
    files_per_s: float
    problems: list[str]
    runs: list[Any]


def _root(tmp: Path, owner: Any, name: str, files: int) -> Any:
    from conversation.services import character_default
    from files.models import FileRoot

    folder = _corpus(tmp / "roots" / name, name.capitalize(), files)
    return FileRoot.objects.create(
        user=owner,
        character=character_default(),
        path=str(folder.resolve()),
        eigentum=FileRoot.Eigentum.NUTZER,
        state=FileRoot.State.ACTIVE,
    )


def _settled(root: Any, files: int) -> bool:
    from files.models import IndexEntry, IndexRun

    runs = IndexRun.objects.filter(root=root)
    return (
        runs.filter(state=IndexRun.State.DONE).exists()
        and not runs.filter(state__in=[IndexRun.State.WAITING, IndexRun.State.RUNNING]).exists()
        and IndexEntry.objects.filter(root=root).count() == files
    )


def _span(run: Any) -> tuple[dt.datetime, dt.datetime]:
    """A finished run's start and end."""
    if run.started_at is None or run.finished_at is None:
        raise BenchError(f"Lauf {run.pk} ({run.state}) ohne Start- oder Endzeit")
    return run.started_at, run.finished_at


def check_root(stack: Any, root: Any, files: int) -> list[str]:
    """Every index row once; each run received by one worker; no two runs of the root at once."""
    from files.models import IndexEntry, IndexRun

    problems = []
    rows = IndexEntry.objects.filter(root=root)
    distinct = rows.values("rel_path").distinct().count()
    if rows.count() != files or distinct != files:
        problems.append(f"{root.path}: {rows.count()} Zeilen, {distinct} Pfade (erwartet {files})")
    runs = list(IndexRun.objects.filter(root=root).order_by("started_at", "pk"))
    for run in runs:
        held = stack.worker_of_task(run.celery_task_id) if run.celery_task_id else []
        if len(held) != 1:
            problems.append(f"Lauf {run.pk} ({run.state}) bei {len(held)} Workern: {held}")
    ran = [(r, *_span(r)) for r in runs if r.started_at and r.finished_at]
    for (earlier, _, ended), (later, began, _) in zip(ran, ran[1:], strict=False):
        if earlier.state != IndexRun.State.REQUEUED and ended > began:
            problems.append(f"Läufe {earlier.pk} und {later.pk} von {root.path} liefen zugleich")
    return problems


def index_round(stack: Any, tmp: Path, owner: Any, tag: str, roots_n: int) -> IndexRound:
    from django.utils import timezone

    from files.models import IndexRun
    from files.watcher.runs import index_run_enqueue

    roots = [_root(tmp, owner, f"{tag}r{i}", INDEX_FILES) for i in range(roots_n)]
    queued_at = timezone.now()
    first = [index_run_enqueue(root_id=root.pk) for root in roots]
    if roots_n > 1:
        # Each root a second time: that message meets the first run's lock (or runs after it).
        for root in roots:
            index_run_enqueue(root_id=root.pk)
    _wait(
        lambda: all(_settled(root, INDEX_FILES) for root in roots),
        f"die Wurzeln {[r.pk for r in roots]} wurden nicht fertig indexiert",
        stack,
    )
    done = [IndexRun.objects.get(pk=run.pk) for run in first]
    problems = [p for root in roots for p in check_root(stack, root, INDEX_FILES)]
    for run in done:
        if run.state != IndexRun.State.DONE:
            problems.append(f"Lauf {run.pk}: {run.state} statt fertig")
    if roots_n > 1:
        (a_start, a_end), (b_start, b_end) = _span(done[0]), _span(done[1])
        holders = [tuple(stack.worker_of_task(r.celery_task_id)) for r in done]
        overlap = a_start < b_end and b_start < a_end
        if holders[0] == holders[1] or not overlap:
            problems.append(f"die zwei Wurzeln liefen nicht zugleich auf zwei Workern: {holders}")
    finished = max(_span(run)[1] for run in done)
    seconds = (finished - queued_at).total_seconds()
    return IndexRound(roots_n * INDEX_FILES / seconds, problems, done)


def indexing(stack: Any, tmp: Path, owner: Any) -> dict[str, list[IndexRound]]:
    rounds: dict[str, list[IndexRound]] = {"two": [], "one": []}
    for r in range(INDEX_ROUNDS):
        order = ("one", "two") if r % 2 == 0 else ("two", "one")
        for config in order:
            n = 2 if config == "two" else 1
            rounds[config].append(index_round(stack, tmp, owner, f"{config}{r}", n))
    return rounds


# --- 3. a worker killed mid-run ------------------------------------------------------------------


@dataclass
class Recovery:
    recovery_s: float
    detected_s: float
    rows_at_kill: int
    killed: str
    finished_by: list[str]
    problems: list[str]


def kill_and_recover(stack: Any, tmp: Path, owner: Any) -> Recovery:
    from django.utils import timezone

    from files.models import IndexEntry, IndexRun
    from files.watcher.runs import index_run_enqueue

    root = _root(tmp, owner, "abbruch", KILL_FILES)
    run = index_run_enqueue(root_id=root.pk)

    def mid_run() -> bool:
        state = IndexRun.objects.filter(pk=run.pk).values_list("state", flat=True).first()
        if state != IndexRun.State.RUNNING:
            return False
        return IndexEntry.objects.filter(root=root).count() >= KILL_AT_ROWS

    _wait(mid_run, "der Lauf zum Abbrechen kam nicht in Gang", stack)
    holders = stack.worker_of_task(run.celery_task_id)
    if len(holders) != 1:
        raise BenchError(f"Lauf {run.pk} bei {len(holders)} Workern: {holders}")
    killed = holders[0]
    stack.workers[killed].send_signal(signal.SIGKILL)
    killed_at = timezone.now()
    stack.workers[killed].wait(10)
    rows_at_kill = IndexEntry.objects.filter(root=root).count()
    if rows_at_kill >= KILL_FILES:
        raise BenchError("der Lauf war schon fertig, als der Worker beendet wurde")
    _wait(
        lambda: _settled(root, KILL_FILES),
        "der abgebrochene Lauf wurde vom anderen Worker nicht zu Ende geführt",
        stack,
    )
    problems = check_root(stack, root, KILL_FILES)
    dead = IndexRun.objects.get(pk=run.pk)
    if dead.state != IndexRun.State.REQUEUED or dead.requeued_as_id is None:
        problems.append(f"Lauf {dead.pk}: {dead.state}, nicht neu eingereiht")
        return Recovery(0.0, 0.0, rows_at_kill, killed, [], problems)
    done = IndexRun.objects.get(pk=dead.requeued_as_id)
    finished_by = stack.worker_of_task(done.celery_task_id)
    if done.state != IndexRun.State.DONE or killed in finished_by or len(finished_by) != 1:
        problems.append(f"Lauf {done.pk}: {done.state}, bei {finished_by}")
    return Recovery(
        recovery_s=(_span(done)[1] - killed_at).total_seconds(),
        detected_s=(dead.finished_at - killed_at).total_seconds()
        if dead.finished_at
        else float("nan"),
        rows_at_kill=rows_at_kill,
        killed=killed,
        finished_by=finished_by,
        problems=problems,
    )


# --- report --------------------------------------------------------------------------------------


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[int(0.95 * (len(ordered) - 1))]


def report(
    start_s: float,
    chat: dict[str, list[ChatRound]],
    index: dict[str, list[IndexRound]],
    rec: Recovery,
) -> tuple[str, list[dict[str, Any]]]:
    two, one = chat["two"], chat["one"]
    tps_two = statistics.median(len(r.turn_ids) / r.wall_s for r in two)
    tps_one = statistics.median(len(r.turn_ids) / r.wall_s for r in one)
    lat_two = [x for r in two for x in r.latencies]
    lat_one = [x for r in one for x in r.latencies]
    all_rounds = [*two, *one]
    lost = sum(r.lost for r in all_rounds)
    duplicated = sum(r.duplicated for r in all_rounds)
    disordered = sum(r.out_of_order for r in all_rounds)
    sessions = SHARED_SESSIONS + OWN_SESSIONS
    fps_two = statistics.median(r.files_per_s for r in index["two"])
    fps_one = statistics.median(r.files_per_s for r in index["one"])
    index_problems = [p for rounds in index.values() for r in rounds for p in r.problems]
    rest = KILL_FILES - rec.rows_at_kill
    bound = STALE_AFTER_S + REAP_EVERY_S + rest / fps_one
    recovered = not rec.problems
    turns = sum(r.expected for r in all_rounds)
    md = "\n".join(
        [
            "### More than one machine: two web instances, two workers, one beat",
            "",
            "Two daphne processes, two Celery workers (solo pool) and one beat against the same "
            f"PostgreSQL and Redis, offline backend; the five processes started in {start_s:.0f} "
            "s. Chats: per round "
            f"{SHARED_SESSIONS} sessions each driven by two clients at once (one on each "
            f"instance) and {OWN_SESSIONS} sessions of their own alternating between the "
            f"instances, {TURNS_PER_CLIENT} turns per client; the anchor is the same clients "
            f"against one instance, interleaved ({CHAT_ROUNDS} rounds each, medians). Lost, "
            "duplicated and out-of-order are counted from the done frames and the stored turns "
            f"({turns} turns, {len(all_rounds) * sessions} sessions):",
            "",
            "| web instances | turns/s | p50 turn (ms) | p95 turn (ms) | ratio to one instance |",
            "|---|---|---|---|---|",
            f"| 2 | {tps_two:.1f} | {1000 * statistics.median(lat_two):.0f} | "
            f"{1000 * _p95(lat_two):.0f} | {tps_two / tps_one:.2f} |",
            f"| 1 (anchor) | {tps_one:.1f} | {1000 * statistics.median(lat_one):.0f} | "
            f"{1000 * _p95(lat_one):.0f} | 1.00 |",
            "",
            f"Turns lost: {lost}, duplicated: {duplicated}, sessions out of order: {disordered}.",
            "",
            f"Indexing: roots of {INDEX_FILES} notes each, every root of the pair queued twice "
            "(the second message meets the first run's advisory lock); files/s from queueing to "
            f"the last run done; anchor: one root on one worker, interleaved ({INDEX_ROUNDS} "
            "rounds each, medians):",
            "",
            "| roots at once | files/s | ratio to one root on one worker |",
            "|---|---|---|",
            f"| 2 on 2 workers | {fps_two:.1f} | {fps_two / fps_one:.2f} |",
            f"| 1 on 1 worker (anchor) | {fps_one:.1f} | 1.00 |",
            "",
            "Every index row once, each run received by one worker, no two runs of a root at "
            f"once: {'yes' if not index_problems else 'NO'}.",
            "",
            f"A worker SIGKILLed after {rec.rows_at_kill} of {KILL_FILES} files "
            f"(heartbeat timeout {STALE_AFTER_S:.0f} s and reaper every {REAP_EVERY_S:.0f} s, "
            "shortened for the benchmark; production defaults 45 s and 15 s): the reaper "
            f"requeued the run after {rec.detected_s:.1f} s, the other worker finished it "
            f"{rec.recovery_s:.1f} s after the kill (bound: timeout + one reaper period + the "
            f"{rest} missing files at one worker's rate = {bound:.1f} s; ratio "
            f"{rec.recovery_s / bound:.2f}). Finished by the other worker, every row once: "
            f"{'yes' if recovered else 'NO'}.",
        ]
    )
    zero = {"unit": "turns", "limit": None, "limit_label": "", "ratio": None, "target": "0"}
    figures: list[dict[str, Any]] = [
        {
            "figure": "two web instances: turns/s",
            "value": round(tps_two, 1),
            "unit": "turns/s",
            "limit": round(tps_one, 1),
            "limit_label": "the same clients on one web instance",
            "ratio": round(tps_two / tps_one, 2),
            "target": "reported (no target)",
            "met": None,
        },
        {
            "figure": "two web instances: p95 turn time",
            "value": round(1000 * _p95(lat_two)),
            "unit": "ms",
            "limit": round(1000 * _p95(lat_one)),
            "limit_label": "p95 on one web instance",
            "ratio": round(_p95(lat_two) / _p95(lat_one), 2),
            "target": "reported (no target)",
            "met": None,
        },
        {**zero, "figure": "two web instances: turns lost", "value": lost, "met": lost == 0},
        {
            **zero,
            "figure": "two web instances: turns duplicated",
            "value": duplicated,
            "met": duplicated == 0,
        },
        {
            **zero,
            "figure": "two web instances: sessions out of order",
            "value": disordered,
            "unit": "sessions",
            "met": disordered == 0,
        },
        {
            "figure": "two roots on two workers: files/s",
            "value": round(fps_two, 1),
            "unit": "files/s",
            "limit": round(fps_one, 1),
            "limit_label": "one root on one worker",
            "ratio": round(fps_two / fps_one, 2),
            "target": "every row once, one worker per run",
            "met": not index_problems,
        },
        {
            "figure": "worker killed mid-run: time to recovery",
            "value": round(rec.recovery_s, 1),
            "unit": "s",
            "limit": round(bound, 1),
            "limit_label": "heartbeat timeout + reaper period + the rest at one worker's rate",
            "ratio": round(rec.recovery_s / bound, 2),
            "target": "finished by the other worker, every row once",
            "met": recovered,
        },
    ]
    return md, figures


def _delete_bench_users() -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username__startswith=USER_PREFIX).delete()


def main() -> None:
    os.environ["NOVABERG_REDIS_DB"] = REDIS_DB
    tmp = Path(tempfile.mkdtemp(prefix="novaberg-bench-multi-"))
    # The roots lie in a folder of their own; the workers' boundary is exactly that folder.
    os.environ["NOVABERG_FILES_BOUNDARY"] = str(tmp / "roots")
    _django.setup(redis=True)
    import redis
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from tests.processes import Stack, process_env

    broker = redis.Redis.from_url(settings.REDIS_URL)
    broker.flushdb()
    _delete_bench_users()  # an earlier run's rows (a run killed before its clean-up)
    env = process_env(
        NOVABERG_LLM_BASE_URL="",
        # INFO: each worker logs the id of every task it receives (which worker held a run).
        NOVABERG_LOG_LEVEL="INFO",
        PYTHONUNBUFFERED="1",
        NOVABERG_FILES_RUN_REAP_EVERY_S=str(REAP_EVERY_S),
        NOVABERG_FILES_RUN_STALE_AFTER_S=str(STALE_AFTER_S),
    )
    stack = Stack(
        tmp / "logs", redis_url=settings.REDIS_URL, env=env, start_timeout_s=START_TIMEOUT_S
    )
    print(f"[bench_multi] load {os.getloadavg()[0]:.1f}; logs in {tmp / 'logs'}", flush=True)
    ok = False
    try:
        t0 = time.perf_counter()
        ports, _workers = stack.start_all(web=2, workers=["eins", "zwei"])
        start_s = time.perf_counter() - t0
        print(f"[bench_multi] started in {start_s:.0f} s", flush=True)
        chat = chats(ports)
        print("[bench_multi] chats done", flush=True)
        owner = get_user_model().objects.create(username=f"{USER_PREFIX}{os.getpid()}-roots")
        index = indexing(stack, tmp, owner)
        print("[bench_multi] indexing done", flush=True)
        rec = kill_and_recover(stack, tmp, owner)
        ok = True
    finally:
        stack.stop()
        broker.flushdb()
        if not ok:
            print(stack.logs(), file=sys.stderr)
            print(f"[bench_multi] logs kept in {tmp / 'logs'}", file=sys.stderr)
    md, figures = report(start_s, chat, index, rec)
    failed = [f["figure"] for f in figures if f["met"] is False]
    if not failed:
        _delete_bench_users()
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"[bench_multi] logs kept in {tmp / 'logs'}", file=sys.stderr)
        problems = [
            *(p for rounds in chat.values() for r in rounds for p in r.problems),
            *(p for rounds in index.values() for r in rounds for p in r.problems),
            *rec.problems,
        ]
        print(md, file=sys.stderr)
        raise BenchError(f"{', '.join(failed)}: " + "; ".join(problems[:10]))
    _django.write_result("multi", md)
    _django.write_figures("multi", figures)
    print(f"[bench_multi] load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
