from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView

from conversation import api as conversation_api
from conversation.views import admin_login
from novaberg.health import LlmStatusApi, healthz
from novaberg.login_throttle import TokenLoginApi

api_patterns: list[URLPattern | URLResolver] = [
    path("auth/token/", TokenLoginApi.as_view(), name="api-token"),
    path("llm/status/", LlmStatusApi.as_view(), name="api-llm-status"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("sessions/", conversation_api.SessionCreateApi.as_view(), name="api-sessions"),
    path(
        "sessions/<int:session_id>/",
        conversation_api.SessionDetailApi.as_view(),
        name="api-session",
    ),
    path(
        "sessions/<int:session_id>/messages/",
        conversation_api.MessageCreateApi.as_view(),
        name="api-messages",
    ),
    path(
        "sessions/<int:session_id>/turns/",
        conversation_api.TurnListApi.as_view(),
        name="api-turns",
    ),
    path("", include("directives.api_urls")),
    path("", include("files.api_urls")),
    path("", include("knowledge.api_urls")),
]

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Before the admin: its login form goes to the one, limited login page.
    path("admin/login/", admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("files.urls")),
    path("", include("knowledge.urls")),
    path("", include("directives.urls")),
    path("", include("conversation.urls")),
]

# Django's own error answers in German (pages in the app's design; {"detail"} under /api/).
handler400 = "novaberg.error_pages.bad_request"
handler403 = "novaberg.error_pages.permission_denied"
handler404 = "novaberg.error_pages.page_not_found"
handler500 = "novaberg.error_pages.server_error"
