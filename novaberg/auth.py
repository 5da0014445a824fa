"""The signed-in person of a request, typed: every read and write takes a ``User``."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from rest_framework.request import Request


def request_user(request: HttpRequest | Request) -> User:
    """The person of a request that passed authentication (``login_required`` or DRF's
    ``IsAuthenticated``). An anonymous request reaching this is a wiring fault: it is refused
    loudly (403), never served as nobody."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied("Anmeldung erforderlich.")
    return user
