from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from knowledge import api

urlpatterns: list[URLPattern | URLResolver] = [
    path("knowledge/", api.KnowledgeListApi.as_view(), name="api-knowledge"),
    path("knowledge/edits/", api.KnowledgeEditListApi.as_view(), name="api-knowledge-edits"),
    path(
        "knowledge/edits/<int:edit_id>/undo/",
        api.KnowledgeEditUndoApi.as_view(),
        name="api-knowledge-edit-undo",
    ),
    path("knowledge/<int:entry_id>/", api.KnowledgeDetailApi.as_view(), name="api-knowledge-entry"),
]
