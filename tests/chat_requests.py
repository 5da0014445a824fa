"""Which pipeline node sent a chat request the fake OpenAI-compatible server recorded: each
node's system prompt starts with its own block name."""

from __future__ import annotations

from typing import Any


def system_prompt(body: dict[str, Any]) -> str:
    """The first message's text of a recorded request body ("" when there is none)."""
    return str((body.get("messages") or [{}])[0].get("content") or "")


def is_router(body: dict[str, Any]) -> bool:
    return system_prompt(body).startswith("[ROUTER]")


def is_vector(body: dict[str, Any]) -> bool:
    return system_prompt(body).startswith("[GESPRAECHSVEKTOR-ANALYSE]")


def is_composer(body: dict[str, Any]) -> bool:
    return system_prompt(body).startswith("[VERFASSER]")


def is_responder(body: dict[str, Any]) -> bool:
    return system_prompt(body).startswith("[IDENTITAET]")
