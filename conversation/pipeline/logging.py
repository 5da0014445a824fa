"""One PipelineLog row per node per turn, with a named outcome and its milliseconds."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.utils import timezone

from conversation.models import PipelineLog
from conversation.pipeline.fallback import details as fallback_details
from conversation.pipeline.state import TurnState
from conversation.vocabulary import ModelFault, NodeOutcome

logger = logging.getLogger("novaberg.pipeline")


@dataclass(frozen=True)
class NodeStart:
    """When a node's work began: the wall clock for its row, the perf counter for its ms."""

    at: datetime
    t0: float

    @classmethod
    def now(cls) -> NodeStart:
        return cls(timezone.now(), time.perf_counter())


@dataclass
class NodeRecord:
    node: str
    outcome: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    # A node whose work began before its place in the node list (issue 16: the conversation
    # vector's model call runs beside retrieval) says when it began and may say its own ms, so
    # the inspector's waterfall draws it where and as long as it ran.
    began: NodeStart | None = None
    ms: int | None = None

    def fallback(self, fault: ModelFault, *, step: str = "", message: str = "") -> None:
        """Name a fallback to the node's offline implementation (``ersatz_offline`` and the
        model's failure) in the details; the outcome stays the node's to set."""
        self.details.update(fallback_details(fault, step=step, message=message))


@contextmanager
def node_log(state: TurnState, node: str) -> Iterator[NodeRecord]:
    """Times the node and writes its row. An exception is logged as outcome ``fehler`` (named by
    its type) and re-raised: a node never ends in silence."""
    record = NodeRecord(node)
    started = timezone.now()
    t0 = time.perf_counter()
    try:
        yield record
    except Exception as exc:
        record.outcome = NodeOutcome.FAILED
        record.details.setdefault("error", f"{type(exc).__name__}: {exc}"[:500])
        raise
    finally:
        if record.began is not None:
            started, t0 = record.began.at, record.began.t0
        ms = record.ms if record.ms is not None else int((time.perf_counter() - t0) * 1000)
        if not record.outcome:
            record.outcome = NodeOutcome.NO_RESULT
        position = state.extra.setdefault("_position", 0)
        state.extra["_position"] = position + 1
        PipelineLog.objects.create(
            turn=state.turn,
            node=node,
            outcome=record.outcome,
            details=record.details,
            ms=ms,
            started_at=started,
            position=position,
        )
        logger.info(
            "node finished",
            extra={"node": node, "outcome": record.outcome, "ms": ms},
        )
