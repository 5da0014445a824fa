from __future__ import annotations

from django.contrib import admin

from files.models import FileRoot, IndexEntry


@admin.register(FileRoot)
class FileRootAdmin(admin.ModelAdmin):
    list_display = ("path", "user", "character", "eigentum", "state", "created_at")
    list_filter = ("state", "eigentum")
    search_fields = ("path",)
    readonly_fields = ("progress", "last_counts", "dry_run", "last_error")


@admin.register(IndexEntry)
class IndexEntryAdmin(admin.ModelAdmin):
    list_display = ("rel_path", "root", "state", "archived", "size", "indexed_at")
    list_filter = ("state", "archived", "format")
    search_fields = ("rel_path", "topic")
    exclude = ("topic_embedding", "search_vector", "search_vector_simple")
