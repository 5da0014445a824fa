"""The folders page: the release flow (path, the dry run, "Freigeben" / "Abbrechen") and one
card per released folder with its progress; files.js polls the roots API."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from files import selectors
from files.boundary import boundary_dirs
from novaberg.auth import request_user

# The sample folder `make run` puts into its default boundary (novaberg/launcher.py).
SAMPLE_FOLDER = "beispiel-notizen"


@login_required
def roots_page(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    roots = list(selectors.root_list(user=user))
    released = {r.path for r in roots}
    # Offered in the path field while it is there and not released yet: a first try needs
    # no path typed by hand.
    sample = next(
        (
            str(base / SAMPLE_FOLDER)
            for base in boundary_dirs(user)
            if (base / SAMPLE_FOLDER).is_dir() and str(base / SAMPLE_FOLDER) not in released
        ),
        "",
    )
    return render(
        request,
        "files/roots.html",
        {"roots": roots, "boundary": [str(b) for b in boundary_dirs(user)], "sample": sample},
    )
