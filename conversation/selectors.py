"""Reads of the conversation app; every query takes the user."""

from __future__ import annotations

import re

from django.contrib.auth.models import User
from django.db.models import Exists, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Substr

from conversation.models import PipelineLog, Session, Turn

# An automatic title: the first message, cut at a word, at most this many characters.
AUTO_TITLE_CHARS = 48
# How much of the first message the list query carries (enough for a title and a search hit).
FIRST_TEXT_CHARS = 200
SNIPPET_CHARS = 90


def session_get(*, user: User, session_id: int) -> Session | None:
    return Session.objects.select_related("character").filter(pk=session_id, user=user).first()


def session_list(*, user: User, query: str = "") -> QuerySet[Session]:
    """The person's chats, newest first, each with ``first_text`` (the start of her first
    message, for the automatic title). ``query`` keeps the chats whose title or any message
    (hers or Nova's) contains it, case-insensitively."""
    first = Turn.objects.filter(session=OuterRef("pk"), role=Turn.Role.USER).order_by(
        "created_at", "id"
    )
    rows = Session.objects.filter(user=user).annotate(
        first_text=Subquery(
            first.annotate(start=Substr("text", 1, FIRST_TEXT_CHARS)).values("start")[:1]
        )
    )
    query = query.strip()
    if query:
        in_text = Turn.objects.filter(session=OuterRef("pk"), text__icontains=query)
        rows = rows.filter(Q(title__icontains=query) | Exists(in_text)).annotate(
            match_text=Subquery(in_text.order_by("created_at", "id").values("text")[:1])
        )
    return rows.order_by("-updated_at", "-id")


def auto_title(text: str | None) -> str:
    """A chat's title from its first message: one line, cut at a word, with "…" when cut."""
    words = " ".join((text or "").split())
    if len(words) <= AUTO_TITLE_CHARS:
        return words
    cut = words[: AUTO_TITLE_CHARS + 1]
    space = cut.rfind(" ")
    head = cut[:space] if space >= AUTO_TITLE_CHARS // 2 else cut[:AUTO_TITLE_CHARS]
    return head.rstrip(" ,.;:–-") + " …"


def session_title(session: Session) -> str:
    """What the person sees: her own title, else the automatic one, else "Neues Gespräch".
    ``session`` comes from ``session_list`` (``first_text``) or is loaded by ``session_get``."""
    if session.title.strip():
        return session.title.strip()
    first = getattr(session, "first_text", None)
    if first is None:
        row = (
            session.turns.filter(role=Turn.Role.USER)
            .order_by("created_at", "id")
            .values_list("text", flat=True)
            .first()
        )
        first = row or ""
    return auto_title(first) or "Neues Gespräch"


def match_snippet(text: str | None, query: str) -> str:
    """A short excerpt of ``text`` around the first place that contains ``query`` (the search
    hit the person sees), or "" when only the title matched."""
    flat = " ".join((text or "").split())
    query = " ".join(query.split())
    if not flat or not query:
        return ""
    found = re.search(re.escape(query), flat, flags=re.IGNORECASE)
    at = found.start() if found else 0
    start = max(0, at - SNIPPET_CHARS // 3)
    piece = flat[start : start + SNIPPET_CHARS]
    return ("… " if start else "") + piece + (" …" if start + SNIPPET_CHARS < len(flat) else "")


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
