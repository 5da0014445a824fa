"""The agent contract and registry: directives and files plug into the turn pipeline here.

An agent returns an ``AgentResult`` with a ``Status`` (DESIGN.md "Agents and the confirmation
gate") plus a named ``step``. Writes never happen in ``handle``: a writing agent asks through
``conversation.gate.ask`` and writes in ``execute`` once the person consented.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from conversation.vocabulary import Status

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from conversation.models import Character, PendingQuestion, Session


@dataclass
class AgentResult:
    status: Status
    text: str
    step: str = ""
    question: str | None = None
    records: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A word outside the vocabulary fails here, loudly, not in a later comparison.
        self.status = Status(self.status)

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "text": self.text,
            "step": self.step,
            "question": self.question,
            "records": self.records,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> AgentResult:
        return cls(
            status=Status(raw["status"]),
            text=raw.get("text", ""),
            step=raw.get("step", ""),
            question=raw.get("question"),
            records=list(raw.get("records") or []),
            data=dict(raw.get("data") or {}),
        )


@dataclass
class AgentContext:
    """What an agent may see of the turn: always scoped to the (user, character) pair."""

    user: User
    character: Character
    session: Session
    text: str
    turn_id: int | None = None
    history: list[dict[str, str]] = field(default_factory=list)


class Agent(Protocol):
    """Every agent: the router asks ``detect``, the agent node calls ``handle``. A read-only
    agent is only this."""

    name: str

    def detect(self, text: str) -> bool:
        """Offline router pattern: is this message an order for this agent?"""
        ...

    def handle(self, ctx: AgentContext) -> AgentResult:
        """Classify and validate; may ask (``gate.ask``); never writes."""
        ...


@runtime_checkable
class WritingAgent(Agent, Protocol):
    """An agent that asks before it writes; the gate resumes its questions."""

    # German sentence for a "nein" at the gate ("An deinen Direktiven ist nichts geändert.").
    dismissed_text: str

    def execute(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
        """Run the confirmed action of ``pending.payload``; verify by reading back.

        Called inside the gate's transaction with the pending row locked, so a repeated or
        racing answer cannot execute twice.
        """
        ...


@runtime_checkable
class ChoosingAgent(Protocol):
    """A writing agent that asks choice questions."""

    def choose(self, ctx: AgentContext, pending: PendingQuestion) -> AgentResult | None:
        """Read a choice answer into a *new yes/no question* (never a write); None: unread."""
        ...


@runtime_checkable
class CorrectingAgent(Protocol):
    """A writing agent that takes a corrected wording with the consent."""

    def correct(
        self, ctx: AgentContext, pending: PendingQuestion, correction: str
    ) -> AgentResult | None:
        """ "ja, aber sag 'Boss' statt 'Chef'" → re-ask with the corrected wording."""
        ...


@runtime_checkable
class AuditedAgent(Protocol):
    """A writing agent that keeps every answer in its audit trail (directives do)."""

    def answered(self, ctx: AgentContext, pending: PendingQuestion, outcome: str) -> None:
        """Called for every answer that is not consent (consent is recorded by ``execute``)."""
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
