"""Django's error answers in German: pages in the app's design, ``{"detail": …}`` under /api/.

Django calls these for a request no view answered itself (an unknown URL, PermissionDenied, a
SuspiciousOperation, an uncaught exception); the API's own errors go through
``novaberg.api_errors.exception_handler``.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.template import loader

DETAILS = {
    400: "Diese Anfrage kann ich nicht bearbeiten: Sie ist ungültig.",
    403: "Dafür fehlt dir die Berechtigung.",
    404: "Diese Seite gibt es nicht.",
    500: "Da ist auf unserer Seite etwas schiefgegangen. Bitte versuch es gleich noch einmal.",
}

# The last resort when even the 500 template cannot be rendered: no template, no database.
FALLBACK_500 = (
    '<!doctype html><html lang="de"><head><meta charset="utf-8"><title>Fehler – Novaberg'
    "</title></head><body><h1>Da ist etwas schiefgegangen</h1><p>"
    + DETAILS[500]
    + "</p></body></html>"
)


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def _page(request: HttpRequest, status: int) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": DETAILS[status]}, status=status)
    return render(request, f"{status}.html", {"detail": DETAILS[status]}, status=status)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, 400)


def permission_denied(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, 403)


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return _page(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    """Rendered without the request's context: no context processor, no session, no database
    (any of them may be what just failed)."""
    if _is_api(request):
        return JsonResponse({"detail": DETAILS[500]}, status=500)
    try:
        html = loader.get_template("500.html").render({"detail": DETAILS[500]})
    except Exception:
        html = FALLBACK_500
    return HttpResponse(html, status=500)
