from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from conversation import views

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.chat, name="chat"),
    path("chat/<int:session_id>/", views.chat, name="chat-session"),
    path("chat/new/", views.chat_new, name="chat-new"),
    path("turns/<int:turn_id>/", views.turn_inspector, name="turn-inspector"),
]
