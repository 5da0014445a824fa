"""The typed state passed from node to node through one turn."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

    from conversation.agents import AgentResult
    from conversation.models import Character, Session, Turn


@dataclass
class TurnState:
    user: AbstractBaseUser
    character: Character
    session: Session
    text: str
    turn: Turn
    on_token: Callable[[str], None] | None = None
    # router / agent
    route: str = "gespraech"
    agent_result: AgentResult | None = None
    # context blocks built for the prompts, by block name ("AUFGABE", "DIREKTIVEN", ...)
    blocks: dict[str, str] = field(default_factory=dict)
    history: list[dict[str, str]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    composer_text: str = ""
    # outcome of the turn
    reply: str = ""
    status: str = "abgeschlossen"
    step: str = ""
    question: str | None = None
    ttft_ms: int | None = None
    finished: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnResult:
    turn_id: int
    reply_turn_id: int | None
    status: str
    step: str
    reply: str
    question: str | None
    records: list[dict[str, Any]]
    ttft_ms: int | None
    total_ms: int
