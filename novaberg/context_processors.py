from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest

from conversation import address
from novaberg import llm


def backend(request: HttpRequest) -> dict[str, object]:
    """The active LLM backend, shown on every page ("Offline-Modus" when none is configured)."""
    return {"llm_label": llm.backend_label(), "llm_offline": llm.get_gateway().name == "offline"}


def address_form(request: HttpRequest) -> dict[str, object]:
    """``siezen``: the person's rules demand "Sie" ("Sieze mich"), so every text of the UI says
    "Sie" too (conversation/address.py; False for a visitor who is not logged in)."""
    user = getattr(request, "user", None)
    if not isinstance(user, User) or not user.is_authenticated:
        return {"siezen": False}
    return {"siezen": address.siezen(user)}
