from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest

from conversation import address
from novaberg import health, llm


def backend(request: HttpRequest) -> dict[str, object]:
    """The active LLM backend, shown on every page ("Offline-Modus" when none is configured)."""
    user = getattr(request, "user", None)
    staff = bool(user is not None and user.is_authenticated and user.is_staff)
    return {
        "llm_label": llm.backend_label(),
        "llm_offline": llm.get_gateway().name == "offline",
        # The model's real state (recent calls, last probe; no network here), the address for
        # staff only (novaberg/health.py::badge).
        "llm_badge": health.badge(staff=staff),
    }


def address_form(request: HttpRequest) -> dict[str, object]:
    """``siezen``: the person's rules demand "Sie" ("Sieze mich"), so every text of the UI says
    "Sie" too (conversation/address.py; False for a visitor who is not logged in)."""
    user = getattr(request, "user", None)
    if not isinstance(user, User) or not user.is_authenticated:
        return {"siezen": False}
    return {"siezen": address.siezen(user)}
