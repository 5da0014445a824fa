"""Nothing runs forever (issue 27): a turn left ``laufend`` by a dead process is closed as
``unterbrochen``.

A turn runs in the web process that holds the person's socket (DESIGN.md: ``turn_stream()``
in the web process), so a crash or restart of that process leaves its turn ``laufend`` with no
reply. Each running turn names its process in ``Turn.owner`` (``turn_owner()``: host, pid
namespace, pid and the process's start time, so a reused pid is not mistaken for the owner).
The reaper runs when a web process starts (novaberg/asgi.py) and on beat
(``conversation.tasks.reap_turns``) and closes

- a turn whose owner is a process on this host (same pid namespace) that no longer exists
  (step ``prozess_beendet``), and
- any running turn older than the turn's deadline plus a margin (step
  ``frist_ueberschritten``): a turn of another host, whose process cannot be asked, or one
  whose process still lives but lost the turn — the runner ends every turn by its deadline
  (settings.TURN_TOTAL_S), so a turn past it plus the margin is no longer being run.

The close is a conditional update (``status`` still ``laufend``): a turn its process finishes
at the same moment keeps the process's own outcome. The turn gets no reply text but a named
outcome: a PipelineLog row ``reaper`` / ``unterbrochen``; the chat shows a note for it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta

import psutil
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from conversation.models import PipelineLog, Turn
from conversation.vocabulary import Status

logger = logging.getLogger("novaberg.turn")

NODE = "reaper"
STEP_DEAD = "prozess_beendet"
STEP_OVERDUE = "frist_ueberschritten"
# What the chat says under a turn the reaper closed (templates/chat.html), by its step.
NOTE_DEAD = "Diese Antwort wurde unterbrochen (der Server wurde neu gestartet)."
NOTE_OVERDUE = "Diese Antwort wurde unterbrochen (sie ist nicht rechtzeitig fertig geworden)."
ASK_AGAIN = {False: "Frag gern noch einmal.", True: "Fragen Sie gern noch einmal."}
# A turn runs at most settings.TURN_TOTAL_S; its last steps after the deadline (storing the
# reply, the reminder) and a slow database get this much more before it counts as lost.
DEFAULT_MARGIN_S = 120.0


@dataclass(frozen=True)
class Owner:
    """Who runs a turn. ``started`` is the process's start time (seconds, two decimals): with
    the pid it names one process, not whichever later process got the same number."""

    host: str
    pid_namespace: str
    pid: int
    started: str

    def text(self) -> str:
        return f"{self.host}|{self.pid_namespace}|{self.pid}|{self.started}"

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        parts = text.split("|")
        if len(parts) != 4 or not parts[2].isdigit():
            return None
        return cls(parts[0], parts[1], int(parts[2]), parts[3])


def _pid_namespace() -> str:
    """The pid namespace (two containers on one host may share a hostname but not their pids)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return ""


def _started(pid: int) -> str | None:
    try:
        return f"{psutil.Process(pid).create_time():.2f}"
    except psutil.Error:
        return None


_owner_cache: dict[int, Owner] = {}


def current_owner() -> Owner:
    """This process as a turn's owner (computed once per process; a fork gets its own)."""
    pid = os.getpid()
    found = _owner_cache.get(pid)
    if found is None:
        found = Owner(socket.gethostname(), _pid_namespace(), pid, _started(pid) or "")
        _owner_cache[pid] = found
    return found


def turn_owner() -> str:
    """``Turn.owner`` for a turn this process starts running now."""
    return current_owner().text()


def owner_gone(owner_text: str, *, me: Owner | None = None) -> bool:
    """True when the owner is a process of this host and pid namespace that no longer exists
    (or whose pid now belongs to a later process). False when it lives or cannot be asked
    (another host, another namespace, no owner recorded)."""
    owner = Owner.parse(owner_text)
    here = me or current_owner()
    if owner is None or (owner.host, owner.pid_namespace) != (here.host, here.pid_namespace):
        return False
    if owner.pid == here.pid and owner.started == here.started:
        return False
    started = _started(owner.pid)
    return started is None or started != owner.started


@dataclass(frozen=True)
class Reaped:
    turn_id: int
    step: str


def margin_s() -> float:
    return float(getattr(settings, "TURN_REAP_MARGIN_S", DEFAULT_MARGIN_S))


def turns_reap(*, now: datetime | None = None) -> list[Reaped]:
    """Close every running turn whose process is gone or whose time is long up; returns them."""
    now = now or timezone.now()
    overdue_before = now - timedelta(seconds=float(settings.TURN_TOTAL_S) + margin_s())
    me = current_owner()
    out: list[Reaped] = []
    running = Turn.objects.filter(
        status=Status.RUNNING, role=Turn.Role.USER, finished_at__isnull=True
    ).values_list("pk", "owner", "created_at")
    for turn_id, owner, created_at in running:
        if owner_gone(owner, me=me):
            step = STEP_DEAD
        elif created_at < overdue_before:
            step = STEP_OVERDUE
        else:
            continue
        if _close(turn_id, step=step, owner=owner, now=now):
            out.append(Reaped(turn_id, step))
    if out:
        logger.warning(
            "reaper closed %d turn(s) left running: %s",
            len(out),
            ", ".join(f"{r.turn_id} ({r.step})" for r in out),
            extra={"outcome": Status.INTERRUPTED.value},
        )
    return out


@transaction.atomic
def _close(turn_id: int, *, step: str, owner: str, now: datetime) -> bool:
    closed = Turn.objects.filter(pk=turn_id, status=Status.RUNNING).update(
        status=Status.INTERRUPTED, step=step, finished_at=now
    )
    if not closed:
        return False  # its process finished it meanwhile: its own outcome stands
    last = PipelineLog.objects.filter(turn_id=turn_id).aggregate(last=Max("position"))["last"]
    PipelineLog.objects.create(
        turn_id=turn_id,
        node=NODE,
        outcome=Status.INTERRUPTED.value,
        details={"schritt": step, "besitzer": owner},
        started_at=now,
        position=0 if last is None else last + 1,
    )
    return True


def note_for(step: str, *, siezen: bool = False) -> str:
    """The German note the chat shows under a turn the reaper closed."""
    said = NOTE_DEAD if step == STEP_DEAD else NOTE_OVERDUE
    return f"{said} {ASK_AGAIN[siezen]}"


_start_lock = threading.Lock()
_started_reap_done = False


def reap_at_start() -> list[Reaped]:
    """The start-up reap of a web process (novaberg/asgi.py): once per process, whoever calls
    first; a failure is logged and left to beat, it never keeps the process from serving."""
    global _started_reap_done
    with _start_lock:
        if _started_reap_done:
            return []
        _started_reap_done = True
        try:
            return turns_reap()
        except Exception:
            logger.exception("reaper at start failed; beat tries again", extra={"step": NODE})
            return []


def reset_start() -> None:
    """Tests: make the next ``reap_at_start()`` run again, as in a new process."""
    global _started_reap_done
    with _start_lock:
        _started_reap_done = False
