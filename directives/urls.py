from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from directives import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("regeln/", views.rules_page, name="regeln"),
]
