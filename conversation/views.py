"""Web pages: the chat and the turn inspector (Django templates + static JS, no build step)."""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversation import selectors, services
from conversation.models import Turn


@login_required
def chat(request: HttpRequest, session_id: int | None = None) -> HttpResponse:
    if session_id is None:
        latest = selectors.session_list(user=request.user).first()
        session = latest or services.session_create(user=request.user)
        return redirect("chat-session", session_id=session.pk)
    session = selectors.session_get(user=request.user, session_id=session_id)
    if session is None:
        raise Http404
    turns = list(session.turns.order_by("created_at", "id"))
    for turn in turns:
        # Read by chat.js from a data attribute (auto-escaped): the records under each reply.
        turn.records_json = json.dumps(  # type: ignore[attr-defined]
            [_record_view(r) for r in turn.records or []], ensure_ascii=False
        )
    return render(
        request,
        "chat.html",
        {
            "session": session,
            "sessions": selectors.session_list(user=request.user)[:50],
            "turns": turns,
        },
    )


def _record_view(record: dict[str, object]) -> dict[str, object]:
    keys = ("path", "lines", "citation", "root_id", "strength", "archived")
    return {k: record.get(k) for k in keys}


@login_required
@require_POST
def chat_new(request: HttpRequest) -> HttpResponse:
    session = services.session_create(user=request.user)
    return redirect("chat-session", session_id=session.pk)


@login_required
def turn_inspector(request: HttpRequest, turn_id: int) -> HttpResponse:
    turn = selectors.turn_get(user=request.user, turn_id=turn_id)
    if turn is None:
        # Another person's turn and a missing one answer the same.
        raise Http404
    replies: list[Turn] = list(turn.replies.all())
    prompts = {
        node: [
            {"role": m.get("role", ""), "content": m.get("content", "")}
            for m in (turn.prompts or {}).get(node, [])
        ]
        for node in ("composer", "responder")
    }
    return render(
        request,
        "inspector.html",
        {
            "turn": turn,
            "reply": replies[-1] if replies else None,
            "bars": selectors.waterfall(turn),
            "prompts": prompts,
            "checks_json": json.dumps(turn.checks or {}, ensure_ascii=False, indent=2),
        },
    )
