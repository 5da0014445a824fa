"""The typed state passed from node to node through one turn."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conversation.vocabulary import Status

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from conversation.agents import AgentResult
    from conversation.models import Character, Session, Turn


# Why a turn ended before its last node (the turn's ``step``).
STOP_PERSON = "stopp"  # the person pressed Stop
STOP_DISCONNECTED = "verbindung_getrennt"  # the client went away mid-turn
STOP_DEADLINE = "zeitlimit_zug"  # the turn ran past settings.TURN_TOTAL_S


class TurnCancel:
    """The stop signal of one turn, set from another thread (the consumer: Stop, a closed
    socket; the API: a client gone) and read by the runner between nodes and by every model
    call of the turn (``llm.cancel_scope``). The first reason wins."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason = ""
        self._lock = threading.Lock()

    def stop(self, reason: str) -> None:
        with self._lock:
            if not self._event.is_set():
                self.reason = reason
                self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


@dataclass
class TurnClock:
    """A turn's cancel signal and its deadline as one check (a callable for the gateway)."""

    cancel: TurnCancel
    deadline: float  # time.monotonic()

    def __call__(self) -> bool:
        return self.cancel.is_set() or time.monotonic() >= self.deadline

    def reason(self) -> str | None:
        """``None`` while the turn may go on; else why it must end."""
        if self.cancel.is_set():
            return self.cancel.reason or STOP_PERSON
        if time.monotonic() >= self.deadline:
            return STOP_DEADLINE
        return None


@dataclass
class ConversationVector:
    """Strategy (what), intent (why), vehicle (how) and the guiding thought of this turn."""

    strategy: str
    intent: str
    vehicle: str
    impulse: str
    source: str  # "llm" | "regeln"
    # seed 003 §2.2: decided here, read by the composer's [GESPRAECHSVEKTOR]: on a request
    # (intent = task) the composer delivers it first.
    first: bool = False


@dataclass
class TurnState:
    user: User
    character: Character
    session: Session
    text: str
    turn: Turn
    on_token: Callable[[str], None] | None = None
    # Stop / disconnect / deadline of this turn (None: runs to its end, e.g. a unit test)
    clock: TurnClock | None = None
    # router / agent
    route: str = "gespraech"
    agent_result: AgentResult | None = None
    # context blocks built for the prompts, by block name ("AUFGABE", "DIREKTIVEN", ...)
    blocks: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, str]] = field(default_factory=list)
    # enricher: the ONE turn vector (such_vektor), reused by memory search, every registered
    # composer source (conversation.context) and the memory write
    query_vector: list[float] | None = None
    memories: list[dict[str, Any]] = field(default_factory=list)
    # items of each composer source this turn, by source name
    found: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # the turn's records: what the records sources found (or an agent's result cited)
    records: list[dict[str, Any]] = field(default_factory=list)
    vector: ConversationVector | None = None
    # [SACHLAGE]: its parts by name (for the log and the provenance check)
    situation: dict[str, Any] = field(default_factory=dict)
    composer_text: str = ""
    # exact messages sent to the models, by node ("composer", "responder") for the inspector
    prompts: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    deviation: float | None = None
    checks: dict[str, Any] = field(default_factory=dict)
    # outcome of the turn
    reply: str = ""
    status: Status = Status.DONE
    step: str = ""
    question: str | None = None
    ttft_ms: int | None = None
    finished: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status == Status.FAILED

    @property
    def asks(self) -> bool:
        """The agent asked a confirmation question: it goes out word for word."""
        result = self.agent_result
        return result is not None and result.status == Status.QUESTION and bool(result.question)


@dataclass(frozen=True)
class TurnResult:
    turn_id: int
    reply_turn_id: int | None
    status: Status
    step: str
    reply: str
    question: str | None
    records: list[dict[str, Any]]
    ttft_ms: int | None
    total_ms: int
    # The tribunal's note under the reply (checks["hinweis"]), if it found something.
    note: dict[str, Any] | None = None
