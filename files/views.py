"""The roots page: list, release form with the dry run shown before confirm, progress."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from files import selectors
from novaberg.auth import request_user


@login_required
def roots_page(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "files/roots.html",
        {
            "roots": selectors.root_list(user=request_user(request)),
            "boundary": settings.FILES_BOUNDARY,
        },
    )
