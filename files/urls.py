from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from files import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("roots/", views.roots_page, name="roots"),
]
