"""Web pages: the chat and the turn inspector (Django templates + static JS, no build step)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_GET, require_POST

from conversation import address, inspection, reaper, rendering, selectors, services
from conversation.models import Turn
from conversation.vocabulary import Status
from novaberg import login_throttle
from novaberg.auth import request_user


def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's own login form would be a second way to guess passwords, past the limit on
    failed logins: every method is sent to the one login page (nothing is checked here)."""
    target = request.GET.get("next") or "/admin/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/admin/"
    return redirect(f"{reverse('login')}?{urlencode({'next': target})}")


class LoginView(auth_views.LoginView):
    """Logging in opens the conversation: a person who has none gets her first one here, on
    the POST, so that no page ever creates anything on a GET."""

    template_name = "login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        # The page says where the demo password comes from, while `make run`'s demo login
        # (novaberg/launcher.py DEMO_USER) exists.
        context["demo_login"] = User.objects.filter(username="demo", is_active=True).exists()
        context["demo_password_file"] = str(settings.DATA_DIR / "demo_password")
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        try:
            return self._post(request, *args, **kwargs)
        except login_throttle.ThrottleUnavailable as exc:
            # The failure counts cannot be read or written (Redis stalls): refused, not
            # let through unlimited (novaberg/login_throttle.py).
            return self._refused(request, exc.message, status=503, retry_after_s=60)

    def _post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # Too many failed tries from this address or for this name: refused before the
        # password is even checked (novaberg/login_throttle.py).
        wait = login_throttle.wait_seconds(login_throttle.attempt_of(request))
        if wait is not None:
            text = login_throttle.too_many_text(wait)
            return self._refused(request, text, status=429, retry_after_s=int(wait) + 1)
        return super().post(request, *args, **kwargs)

    def _refused(
        self, request: HttpRequest, text: str, *, status: int, retry_after_s: int
    ) -> HttpResponse:
        form = self.get_form_class()(request, initial={"username": request.POST.get("username")})
        context = self.get_context_data(form=form, throttled=text)
        response = self.render_to_response(context, status=status)
        response["Retry-After"] = str(retry_after_s)
        return response

    def form_invalid(self, form: AuthenticationForm) -> HttpResponse:
        login_throttle.record_failure(login_throttle.attempt_of(self.request))
        return super().form_invalid(form)

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        login_throttle.forget(login_throttle.attempt_of(self.request))
        response = super().form_valid(form)
        services.session_ensure(user=request_user(self.request))
        return response


CHAT_LIST_LIMIT = 50


@login_required
@require_GET
def chat(request: HttpRequest, session_id: int | None = None) -> HttpResponse:
    user = request_user(request)
    if session_id is None:
        latest = selectors.session_list(user=user).first()
        if latest is not None:
            return redirect("chat-session", session_id=latest.pk)
        # No conversation yet (a login through the admin): the page offers to start one.
        return render(
            request,
            "chat.html",
            {"session": None, "sessions": [], "turns": [], "title": "Noch kein Gespräch"},
        )
    session = selectors.session_get(user=user, session_id=session_id)
    if session is None:
        raise Http404
    # reply_to: the timings of a turn live on the person's turn the reply answers.
    turns = list(session.turns.select_related("reply_to").order_by("created_at", "id"))
    # Read by chat.js from a data attribute (auto-escaped): the records under each reply.
    records_json = {
        turn.pk: json.dumps([_record_view(r) for r in turn.records or []], ensure_ascii=False)
        for turn in turns
    }
    # Nova's replies as sanitised HTML (conversation/rendering.py); the person's words stay text.
    html = {turn.pk: rendering.reply_html(turn.text) for turn in turns if turn.role != "user"}
    # A turn its dead process left running and the reaper closed has no reply: a note says so.
    interrupted = [t for t in turns if t.role == "user" and t.status == Status.INTERRUPTED]
    sie = address.siezen(user) if interrupted else False
    notes = {t.pk: reaper.note_for(t.step, siezen=sie) for t in interrupted}
    # The chat list with the titles she sees (her own, else the automatic one).
    sessions = [
        {"pk": s.pk, "title": selectors.session_title(s), "updated_at": s.updated_at}
        for s in selectors.session_list(user=user)[:CHAT_LIST_LIMIT]
    ]
    title = next((s["title"] for s in sessions if s["pk"] == session.pk), None)
    return render(
        request,
        "chat.html",
        {
            "session": session,
            "sessions": sessions,
            "title": title or selectors.session_title(session),
            "turns": [
                (turn, records_json[turn.pk], html.get(turn.pk, ""), notes.get(turn.pk, ""))
                for turn in turns
            ],
        },
    )


def _record_view(record: dict[str, object]) -> dict[str, object]:
    keys = ("path", "lines", "citation", "root_id", "strength", "archived")
    return {k: record.get(k) for k in keys}


@login_required
@require_POST
def chat_new(request: HttpRequest) -> HttpResponse:
    session = services.session_create(user=request_user(request))
    return redirect("chat-session", session_id=session.pk)


def _side_by_side(bars: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Issue 16: the nodes whose work overlapped in time (the conversation vector's model call
    beside retrieval), as (the one that began first, the others beside it) in German names."""
    beside: dict[str, list[str]] = {}
    spans = [(int(b["offset_ms"]), int(b["offset_ms"]) + int(b["ms"]), b) for b in bars]
    for i, (start, end, bar) in enumerate(spans):
        for other_start, other_end, other in spans[i + 1 :]:
            if start < other_end and other_start < end:
                first, second = (bar, other) if start <= other_start else (other, bar)
                beside.setdefault(str(first["node_label"]), []).append(str(second["node_label"]))
    return [(first, " und ".join(others)) for first, others in beside.items()]


@login_required
def turn_inspector(request: HttpRequest, turn_id: int) -> HttpResponse:
    turn = selectors.turn_get(user=request_user(request), turn_id=turn_id)
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
    bars = inspection.node_rows(selectors.waterfall(turn))
    side_by_side = _side_by_side(bars)
    return render(
        request,
        "inspector.html",
        {
            "turn": turn,
            "reply": replies[-1] if replies else None,
            "bars": bars,
            "fallbacks": [bar for bar in bars if bar["fallback"]],
            "side_by_side": side_by_side,
            "prompts": prompts,
            "checks_json": json.dumps(turn.checks or {}, ensure_ascii=False, indent=2),
            # issue 15: the checks as a table, outcomes in German, the deviation explained.
            "check_rows": inspection.check_rows(turn.checks or {}),
            "status_label": inspection.status_label(turn.status),
            "deviation_explained": inspection.DEVIATION_EXPLAINED,
        },
    )
