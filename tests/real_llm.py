"""What the tests against a real language model share (tests marked ``llm``; `make test-llm`).

They run against whatever OpenAI-compatible endpoint ``NOVABERG_LLM_BASE_URL`` names; `make
test-llm` without it starts llama.cpp's server with a small base model (tests/llm_server.py),
which babbles and breaks JSON. So these tests assert robustness, never the model's wisdom: every
call and every turn ends within its deadline, nothing is written without the person's consent,
and what reaches the chat is well formed.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from novaberg.llm import budget_for, reset_gateway

BASE_URL = os.environ.get("NOVABERG_LLM_BASE_URL", "")
# The llama.cpp server's own log (set by tests/llm_server.py); None for any other endpoint.
SERVER_LOG = (
    Path(os.environ["NOVABERG_LLM_SERVER_LOG"])
    if os.environ.get("NOVABERG_LLM_SERVER_LOG")
    else None
)

# What a busy 2-core machine may add to a deadline: the thread that notices it, closing the
# connection, the offline fallback after it, storing the turn.
SLACK_S = 5.0

needs_real_llm = [
    pytest.mark.llm,
    pytest.mark.skipif(not BASE_URL, reason="NOVABERG_LLM_BASE_URL not set"),
]

# llama-cpp-python's server prints this when it sees the client go away mid-stream and stops
# generating (llama_cpp/server/app.py, get_event_publisher).
SERVER_SAW_DISCONNECT = "disconnected"


def load_embedding_model() -> None:
    """Load (on a fresh run: export) the embedding model before any measured turn: that takes
    seconds to minutes on a busy machine and is no turn's time (daphne does it at start too;
    started after this, it finds the export done)."""
    from novaberg import embeddings

    embeddings.warm_up()


def use_real_llm(settings: Any) -> None:
    settings.LLM_BASE_URL = BASE_URL
    settings.LLM_API_KEY = os.environ.get("NOVABERG_LLM_API_KEY", "")
    settings.LLM_MODEL = os.environ.get("NOVABERG_LLM_MODEL", settings.LLM_MODEL)
    reset_gateway()


def call_deadline_s(purpose: str) -> float:
    """The longest one model call of ``purpose`` may take (novaberg/llm.py: its budget's
    deadline, capped by NOVABERG_LLM_TOTAL_S)."""
    return min(budget_for(purpose).deadline_s, float(settings.LLM_TOTAL_S))


def turn_deadline_s() -> float:
    """The longest one turn may take: NOVABERG_TURN_TOTAL_S where the pipeline has it."""
    return float(getattr(settings, "TURN_TOTAL_S", settings.LLM_TOTAL_S))


@dataclass(frozen=True)
class Call:
    purpose: str
    outcome: str
    ms: int
    turn_id: int | None = None


class Calls(logging.Handler):
    """Every model call this process makes, from the gateway's one log line per call."""

    def __init__(self) -> None:
        super().__init__(level=logging.INFO)
        self.calls: list[Call] = []

    def emit(self, record: logging.LogRecord) -> None:
        purpose = getattr(record, "purpose", None)
        ms = getattr(record, "ms", None)
        if getattr(record, "llm_backend", None) != "openai" or purpose is None or ms is None:
            return
        outcome = str(getattr(record, "outcome", ""))
        self.calls.append(Call(str(purpose), outcome, int(ms), getattr(record, "turn_id", None)))

    def since(self, mark: int) -> list[Call]:
        return self.calls[mark:]


@contextmanager
def capture_calls() -> Iterator[Calls]:
    logger = logging.getLogger("novaberg.llm")
    handler = Calls()
    old_level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def calls_from_log(text: str) -> list[Call]:
    """The model calls in a daphne log (JSON lines, NOVABERG_LOG_LEVEL=INFO)."""
    found = []
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if not isinstance(row, dict) or row.get("llm_backend") != "openai":
            continue
        turn_id = row.get("turn_id")
        found.append(
            Call(
                str(row.get("purpose")),
                str(row.get("outcome")),
                int(row.get("ms", 0)),
                int(turn_id) if isinstance(turn_id, int) else None,
            )
        )
    return found


def late_calls(calls: list[Call]) -> list[str]:
    """Calls that ran past their purpose's deadline (with slack), as readable lines."""
    return [
        f"{c.purpose}: {c.ms} ms > {call_deadline_s(c.purpose):.0f} s ({c.outcome})"
        for c in calls
        if c.ms > (call_deadline_s(c.purpose) + SLACK_S) * 1000
    ]


class ServerLog:
    """The llama.cpp server's log from a point on: did it see our client go away?"""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size

    def new_text(self) -> str:
        with self.path.open("rb") as f:
            f.seek(self.offset)
            return f.read().decode(errors="replace")

    def wait_for(self, needle: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if re.search(rf"^{re.escape(needle)}\b", self.new_text(), re.MULTILINE):
                return True
            time.sleep(0.1)
        return False
