"""Reads of the conversation app; every query takes the user."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch, QuerySet

from conversation.models import PipelineLog, Session, Turn


def session_get(*, user: AbstractBaseUser, session_id: int) -> Session | None:
    return Session.objects.select_related("character").filter(pk=session_id, user=user).first()


def session_list(*, user: AbstractBaseUser) -> QuerySet[Session]:
    return Session.objects.filter(user=user).order_by("-updated_at")


def turn_list(*, user: AbstractBaseUser, session: Session) -> QuerySet[Turn]:
    """The person's turns with Nova's reply text and the pipeline rows (two queries in all)."""
    return (
        Turn.objects.filter(session=session, session__user=user, role=Turn.Role.USER)
        .prefetch_related(
            Prefetch("pipeline", queryset=PipelineLog.objects.order_by("position", "id")),
            Prefetch("replies", queryset=Turn.objects.only("id", "text", "reply_to_id")),
        )
        .order_by("created_at", "id")
    )
