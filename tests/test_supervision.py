"""`make run` heals itself: a child that dies is started again (with a pause that doubles, and a
German line naming it and how it ended), one that cannot start at all ends the stack with one
clear line, and a launcher killed hard takes daphne, worker and beat with it.

The first tests drive the supervisor with small real processes; the last ones start the real
launcher on a fresh data folder of its own and kill its worker, then the launcher itself."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from django.conf import settings

from novaberg import embedded, launcher
from tests.test_launcher import _env, _free_port

BASE_DIR = Path(__file__).resolve().parent.parent
SLEEPER = ["-c", "import time; time.sleep(600)"]


def _wait_for(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s:.0f} s: {what}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the supervisor with small real processes ---------------------------------------------------


def test_a_killed_child_is_restarted_with_a_german_line_and_the_other_keeps_running() -> None:
    lines: list[str] = []
    worker = launcher.Child("Celery-Worker", SLEEPER)
    beat = launcher.Child("Celery-Beat", SLEEPER)
    supervisor = launcher.Supervisor([worker, beat], env=os.environ, log=lines.append)
    supervisor.start_all()
    try:
        assert worker.proc is not None and beat.proc is not None
        old, beat_pid = worker.proc.pid, beat.proc.pid
        os.kill(old, signal.SIGKILL)

        def restarted() -> bool:
            supervisor.tick()
            return worker.restarts == 1

        _wait_for(restarted, 10, "the worker is started again")
        assert worker.proc.pid != old and _alive(worker.proc.pid)
        assert beat.proc.pid == beat_pid and _alive(beat_pid) and beat.restarts == 0
        assert lines == [
            f"Celery-Worker (PID {old}) ist unerwartet durch Signal SIGKILL beendet. "
            "Neustart in 1 s (1. Absturz in Folge).",
            f"Celery-Worker neu gestartet (PID {worker.proc.pid}).",
        ]
    finally:
        supervisor.stop_all()
    assert not _alive(worker.proc.pid) and not _alive(beat.proc.pid)


def _crash_once(supervisor: launcher.Supervisor, child: launcher.Child, clock: FakeClock) -> float:
    """Let the child die (it exits at once), let the supervisor see it; returns the pause it
    chose, after which the clock is moved on and the child started again."""
    assert child.proc is not None
    child.proc.wait(10)
    supervisor.tick()
    assert child.restart_at is not None
    pause = child.restart_at - clock.now
    clock.now = child.restart_at
    supervisor.tick()
    assert child.restart_at is None  # started again
    return pause


def test_the_pause_doubles_is_capped_and_a_healthy_run_resets_it() -> None:
    clock = FakeClock()
    lines: list[str] = []
    child = launcher.Child("daphne", ["-c", "raise SystemExit(3)"])
    supervisor = launcher.Supervisor(
        [child], env=os.environ, log=lines.append, clock=clock, give_up_after=100
    )
    supervisor.start_all()
    try:
        pauses = [_crash_once(supervisor, child, clock) for _ in range(8)]
        assert pauses == [1, 2, 4, 8, 16, 30, 30, 30]
        assert "daphne (PID " in lines[0] and "mit Exit-Status 3 beendet" in lines[0]
        # It ran a minute and longer before it died: the next pause is the first one again.
        clock.now += launcher.HEALTHY_AFTER_S + 1
        assert _crash_once(supervisor, child, clock) == 1
    finally:
        supervisor.stop_all()


def test_a_child_that_dies_at_once_again_and_again_ends_the_stack_with_one_line() -> None:
    clock = FakeClock()
    lines: list[str] = []
    child = launcher.Child("Celery-Beat", ["-c", "raise SystemExit(7)"])
    supervisor = launcher.Supervisor([child], env=os.environ, log=lines.append, clock=clock)
    supervisor.start_all()
    try:
        for _ in range(launcher.GIVE_UP_AFTER - 1):
            _crash_once(supervisor, child, clock)
        assert child.proc is not None
        child.proc.wait(10)
        with pytest.raises(launcher.GaveUp) as caught:
            supervisor.tick()
    finally:
        supervisor.stop_all()
    message = str(caught.value)
    assert message.startswith("Celery-Beat endet immer wieder gleich nach dem Start")
    assert "5-mal in Folge" in message and "mit Exit-Status 7 beendet" in message
    assert child.restarts == launcher.GIVE_UP_AFTER - 1  # and no further start
    assert len(lines) == 2 * (launcher.GIVE_UP_AFTER - 1)  # a crash line, a restart line


def test_a_child_that_once_ran_a_while_is_not_given_up() -> None:
    clock = FakeClock()
    child = launcher.Child("daphne", ["-c", "raise SystemExit(1)"])
    supervisor = launcher.Supervisor([child], env=os.environ, log=lambda _: None, clock=clock)
    supervisor.start_all()
    try:
        for round_ in range(3 * launcher.GIVE_UP_AFTER):
            if round_ % (launcher.GIVE_UP_AFTER - 1) == 0:
                clock.now += launcher.FAST_CRASH_S + 1  # this time it stayed up a while
            _crash_once(supervisor, child, clock)
    finally:
        supervisor.stop_all()
    assert child.restarts == 3 * launcher.GIVE_UP_AFTER


PARENT = """
import sys, time
from novaberg import launcher
children = [launcher.Child("daphne", ["-c", "import time; time.sleep(600)"]),
            launcher.Child("Celery-Worker", ["-c", "import time; time.sleep(600)"],
                           death_signal=__import__("signal").SIGQUIT)]
supervisor = launcher.Supervisor(children, env={"PATH": "/usr/bin:/bin"})
supervisor.start_all()
print(" ".join(str(c.proc.pid) for c in children), flush=True)
time.sleep(600)
"""


def test_children_die_with_a_parent_killed_hard() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], cwd=BASE_DIR, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        parent.kill()
        parent.wait(10)
        _wait_for(lambda: not any(_alive(pid) for pid in pids), 5, f"children {pids} gone")
    finally:
        if parent.poll() is None:
            parent.kill()


# --- the servers a killed launcher left behind ----------------------------------------------------


def test_servers_of_a_killed_run_are_adopted_those_of_a_live_run_or_services_are_not(
    tmp_path: Path,
) -> None:
    owner = launcher.owner_file(tmp_path)
    assert launcher.orphaned_services(tmp_path) == []  # `launcher services`: no owner file
    owner.write_text("999999999 1.0 postgres redis\n")  # a run killed hard
    assert launcher.orphaned_services(tmp_path) == ["postgres", "redis"]
    started = ["redis"]  # this run had to start Redis again; PostgreSQL was still running
    launcher.adopt_services(tmp_path, ["postgres", "redis"], started)
    assert started == ["redis", "postgres"]  # both stopped at this run's end
    pid, _, *names = owner.read_text().split()
    assert int(pid) == os.getpid() and names == ["redis", "postgres"]
    # This run is alive: a second run beside it adopts nothing and leaves its owner file.
    assert launcher.orphaned_services(tmp_path) == []
    launcher.adopt_services(tmp_path, [], [])
    assert owner.exists()
    owner.write_text(f"1 {psutil.Process(1).create_time()} postgres\n")  # another live run
    launcher.release_owner(tmp_path)
    assert owner.exists()
    launcher.adopt_services(tmp_path, [], ["redis"])  # this run's own, released at its end
    launcher.release_owner(tmp_path)
    assert not owner.exists()


# --- the real launcher --------------------------------------------------------------------------


def _worker_ready(output: list[str]) -> int:
    """How many times a worker of the launcher said it consumes."""
    return sum(1 for line in output if "MainProcess] novaberg-" in line and " ready." in line)


@dataclass
class Stack:
    proc: subprocess.Popen[str]
    data: Path
    output: list[str]

    def children(self) -> dict[str, psutil.Process]:
        """The launcher's direct children by role."""
        found: dict[str, psutil.Process] = {}
        for child in psutil.Process(self.proc.pid).children():
            cmd = " ".join(child.cmdline())
            role = "worker" if " worker" in cmd else "beat" if " beat" in cmd else "daphne"
            found[role] = child
        return found


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    """One `launcher run` on a fresh folder for the tests below (they run in file order; the
    last one kills it). The folder lies in this test run's own one, not under pytest's temp
    root: another pytest starting on this machine narrows that to 0700, and the pgserver user
    would lose its way into the cluster."""
    data = Path(settings.DATA_DIR) / f"supervision-{os.getpid()}"
    shutil.rmtree(data, ignore_errors=True)
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "novaberg.launcher", "run"],
        cwd=BASE_DIR,
        env=_env(port, data),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            output.append(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        # The worker consumes (it logs "… ready."): enough for these tests, which need not wait
        # for daphne's first /healthz to load the embedding model.
        _wait_for(
            lambda: _worker_ready(output) == 1 or proc.poll() is not None,
            300,
            "the launcher's worker is ready",
        )
        assert proc.poll() is None, "".join(output)[-3000:]
        yield Stack(proc, data, output)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        embedded.stop_postgres(data)
        embedded.stop_redis(data)
        shutil.rmtree(data, ignore_errors=True)


@pytest.mark.slow
def test_a_worker_killed_hard_comes_back_and_the_rest_keeps_running(stack: Stack) -> None:
    before = stack.children()
    assert set(before) == {"daphne", "worker", "beat"}
    pg, rd = embedded.postgres_state(stack.data), embedded.redis_state(stack.data)
    assert pg is not None and rd is not None
    old = before["worker"].pid

    os.kill(old, signal.SIGKILL)

    _wait_for(
        lambda: any("Celery-Worker neu gestartet" in line for line in stack.output),
        20,
        "the launcher starts the worker again",
    )
    text = "".join(stack.output)
    assert (
        f"Celery-Worker (PID {old}) ist unerwartet durch Signal SIGKILL beendet. Neustart in 1 s"
        in text
    )
    after = stack.children()
    assert after["worker"].pid != old
    assert after["daphne"].pid == before["daphne"].pid and after["daphne"].is_running()
    assert after["beat"].pid == before["beat"].pid and after["beat"].is_running()
    assert stack.proc.poll() is None
    # The servers were not touched.
    assert embedded.postgres_state(stack.data) == pg
    assert embedded.redis_state(stack.data) == rd
    # The new worker is connected to the broker (with the Redis password) and consumes again.
    _wait_for(lambda: _worker_ready(stack.output) == 2, 40, "the new worker consumes")


@pytest.mark.slow
def test_no_password_is_on_a_command_line_or_in_the_log(stack: Stack) -> None:
    redis_password = embedded.redis_password_path(stack.data).read_text().strip()
    demo_password = (stack.data / "demo_password").read_text().strip()
    rd = embedded.redis_state(stack.data)
    assert rd is not None and rd.pid is not None and redis_password in rd.url
    processes = [psutil.Process(stack.proc.pid), psutil.Process(rd.pid)]
    processes += psutil.Process(stack.proc.pid).children(recursive=True)
    for process in processes:
        cmdline = " ".join(process.cmdline())
        assert redis_password not in cmdline and demo_password not in cmdline, cmdline
    assert redis_password not in "".join(stack.output)
    assert "redis://:***@127.0.0.1:" in "".join(stack.output)


@pytest.mark.slow
def test_a_launcher_killed_hard_leaves_no_daphne_worker_or_beat(stack: Stack) -> None:
    children = psutil.Process(stack.proc.pid).children(recursive=True)
    roles = {" ".join(c.cmdline()) for c in children}
    assert any(" worker" in r for r in roles) and any(" beat" in r for r in roles)
    assert any("daphne" in r for r in roles)

    stack.proc.kill()
    stack.proc.wait(10)

    deadline = time.monotonic() + 10
    while any(_alive(c.pid) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = [" ".join(c.cmdline()) for c in children if _alive(c.pid)]
    assert survivors == []
    # The servers are daemons of the data folder (README "make run"): they stay, and a later
    # run or `make stop` finds them by their PID files.
    assert embedded.postgres_state(stack.data) is not None
    assert embedded.redis_state(stack.data, ping=True) is not None
    assert launcher.orphaned_services(stack.data) == ["postgres", "redis"]


def test_the_ready_probe_never_blocks_the_supervisor_while_healthz_is_slow() -> None:
    """daphne's first /healthz loads the embedding model (tens of seconds on a busy machine);
    meanwhile a crashed worker must still be restarted, so the probe may not wait for it."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Slow(BaseHTTPRequestHandler):
        calls = 0

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            Slow.calls += 1
            time.sleep(1.5)
            code = 503 if Slow.calls == 1 else 200
            body = b'{"worker": "kein Celery-Worker antwortet"}' if code == 503 else b"{}"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        probe = launcher.HealthProbe("127.0.0.1", server.server_address[1], "/healthz")
        answers: list[str | None] = []
        slowest = 0.0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "" not in answers:
            began = time.monotonic()
            answers.append(probe.step())
            slowest = max(slowest, time.monotonic() - began)
            time.sleep(0.05)
    finally:
        server.shutdown()
    assert slowest < 0.5  # never waited for the slow answer
    assert answers[0] is None and "" in answers
    assert '{"worker": "kein Celery-Worker antwortet"}' in answers
