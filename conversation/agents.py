"""The agent contract and registry: directives and files plug into the turn pipeline here.

An agent returns an ``AgentResult`` with a status from DESIGN.md ("Agents and the confirmation
gate"): ``laufend``, ``rueckfrage``, ``abgeschlossen``, ``dismissed``, ``rejected``, ``abgelehnt``
or ``fehler`` plus a named ``step``. Writes never happen in ``handle``: the agent asks through
``conversation.gate.ask`` and writes in ``execute`` once the person consented.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from conversation.models import Character, PendingQuestion, Session


STATUSES = (
    "laufend",
    "rueckfrage",
    "abgeschlossen",
    "dismissed",
    "rejected",
    "abgelehnt",
    "fehler",
)


@dataclass
class AgentResult:
    status: str
    text: str
    step: str = ""
    question: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown agent status {self.status!r}")

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "text": self.text,
            "step": self.step,
            "question": self.question,
            "records": self.records,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AgentResult:
        return cls(
            status=raw["status"],
            text=raw.get("text", ""),
            step=raw.get("step", ""),
            question=raw.get("question"),
            records=list(raw.get("records") or []),
            data=dict(raw.get("data") or {}),
        )


@dataclass
class AgentContext:
    """What an agent may see of the turn: always scoped to the (user, character) pair."""

    user: AbstractBaseUser
    character: Character
    session: Session
    text: str
    turn_id: int | None = None
    history: list[dict[str, str]] = field(default_factory=list)


class Agent(Protocol):
    name: str
    # German noun used in gate sentences ("An deinen Direktiven ist nichts geaendert.").
    dismissed_text: str

    def detect(self, text: str) -> bool:
        """Offline router pattern: is this message an order for this agent?"""
        ...

    def handle(self, ctx: AgentContext) -> AgentResult:
        """Classify and validate; may ask (``gate.ask``); never writes."""
        ...

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        """Run the confirmed action of ``pending.payload``; verify by reading back.

        Called inside the gate's transaction with the pending row locked, so a repeated or
        racing answer cannot execute twice.
        """
        ...


class ChoiceAgent(Protocol):
    def choose(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult | None:
        """Optional: read a choice answer into a *new yes/no question* (never a write)."""
        ...


class CorrectingAgent(Protocol):
    def correct(
        self, ctx: AgentContext, pending: PendingQuestion, correction: str
    ) -> AgentResult | None:
        """Optional: "ja, aber sag 'Boss' statt 'Chef'" → re-ask with the corrected wording."""
        ...


_REGISTRY: dict[str, tuple[int, Agent]] = {}


def register_agent(agent: Agent, *, priority: int = 100) -> None:
    """Register ``agent``; the router asks agents by ascending ``priority``, so an agent with
    narrower patterns (a files order names a folder) goes before a wider one that shares words
    with it (the directives agent also reads "vergiss")."""
    _REGISTRY[agent.name] = (priority, agent)


def unregister_agent(name: str) -> None:
    """For tests that plug in an agent of their own."""
    _REGISTRY.pop(name, None)


def get_agent(name: str) -> Agent | None:
    entry = _REGISTRY.get(name)
    return entry[1] if entry else None


def all_agents() -> list[Agent]:
    # sorted() is stable: equal priorities keep their registration order.
    return [agent for _, agent in sorted(_REGISTRY.values(), key=lambda entry: entry[0])]
