"""Reads of the conversation app; every query takes the user."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Prefetch, QuerySet

from conversation.models import PipelineLog, Session, Turn


def session_get(*, user: User, session_id: int) -> Session | None:
    return Session.objects.select_related("character").filter(pk=session_id, user=user).first()


def session_list(*, user: User) -> QuerySet[Session]:
    return Session.objects.filter(user=user).order_by("-updated_at")


def turn_list(*, user: User, session: Session) -> QuerySet[Turn]:
    """The person's turns with Nova's reply text and the pipeline rows (two queries in all)."""
    return (
        Turn.objects.filter(session=session, session__user=user, role=Turn.Role.USER)
        .prefetch_related(
            Prefetch("pipeline", queryset=PipelineLog.objects.order_by("position", "id")),
            Prefetch("replies", queryset=Turn.objects.only("id", "text", "reply_to_id")),
        )
        .order_by("created_at", "id")
    )


def turn_get(*, user: User, turn_id: int) -> Turn | None:
    """One of the person's own turns (role user) with its pipeline rows and Nova's reply."""
    return (
        Turn.objects.filter(pk=turn_id, session__user=user, role=Turn.Role.USER)
        .select_related("session")
        .prefetch_related(
            Prefetch("pipeline", queryset=PipelineLog.objects.order_by("position", "id")),
            "replies",
        )
        .first()
    )


def waterfall(turn: Turn) -> list[dict[str, object]]:
    """The turn's nodes as bars: offset and width in ms and in percent of the whole turn."""
    rows = list(turn.pipeline.all())
    if not rows:
        return []
    start = turn.created_at
    offsets = [max(0, int((r.started_at - start).total_seconds() * 1000)) for r in rows]
    total = max(
        [turn.total_ms or 0, *(o + r.ms for o, r in zip(offsets, rows, strict=True))], default=1
    )
    total = max(total, 1)
    return [
        {
            "node": r.node,
            "outcome": r.outcome,
            "ms": r.ms,
            "offset_ms": o,
            "left": round(100 * o / total, 2),
            "width": max(round(100 * r.ms / total, 2), 0.6),
            "details": r.details,
        }
        for o, r in zip(offsets, rows, strict=True)
    ]
