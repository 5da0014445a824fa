from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from knowledge import views

urlpatterns: list[URLPattern | URLResolver] = [
    path("wissen/", views.wissen_page, name="wissen"),
]
