"""Web pages: the chat (Django templates + static JS, no build step)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from conversation import selectors, services


@login_required
def chat(request: HttpRequest, session_id: int | None = None) -> HttpResponse:
    if session_id is None:
        latest = selectors.session_list(user=request.user).first()
        session = latest or services.session_create(user=request.user)
        return redirect("chat-session", session_id=session.pk)
    session = selectors.session_get(user=request.user, session_id=session_id)
    if session is None:
        raise Http404
    turns = session.turns.order_by("created_at", "id")
    return render(
        request,
        "chat.html",
        {
            "session": session,
            "sessions": selectors.session_list(user=request.user)[:50],
            "turns": turns,
        },
    )


@login_required
@require_POST
def chat_new(request: HttpRequest) -> HttpResponse:
    session = services.session_create(user=request.user)
    return redirect("chat-session", session_id=session.pk)
