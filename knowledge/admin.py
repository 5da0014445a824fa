"""Read-only admin of the library, the edits and the return-path runs: everything is visible,
nothing is changed behind the write layer's back (edits go through the tools and the undo)."""

from __future__ import annotations

from django.contrib import admin

from conversation.admin import ReadOnlyAdmin as _ReadOnly
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun


@admin.register(KnowledgeEntry)
class KnowledgeEntryAdmin(_ReadOnly):
    list_display = ("path", "user", "character", "version", "haeufigkeit", "verstaerkt_am", "typ")
    list_filter = ("typ", "quelle_geaendert")
    search_fields = ("path", "topic")
    exclude = ("topic_embedding", "search_vector", "search_vector_simple")


@admin.register(KnowledgeEdit)
class KnowledgeEditAdmin(_ReadOnly):
    list_display = ("path", "user", "tool", "mark", "cause", "outcome", "created_at")
    list_filter = ("outcome", "cause", "tool")
    search_fields = ("path",)


@admin.register(RueckwegRun)
class RueckwegRunAdmin(_ReadOnly):
    list_display = ("memory_key", "user", "outcome", "step", "planner", "started_at", "ms")
    list_filter = ("outcome", "planner")
