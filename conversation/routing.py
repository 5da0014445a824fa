from __future__ import annotations

from django.urls import path

from conversation import consumers

websocket_urlpatterns = [
    path("ws/sessions/<int:session_id>/", consumers.ChatConsumer.as_asgi()),
]
