from __future__ import annotations

from django.contrib import admin

from conversation.models import (
    Character,
    MemoryEntry,
    PendingQuestion,
    PipelineLog,
    Session,
    Turn,
)


@admin.register(Character)
class CharacterAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)
    fields = ("name", "identity", "sheet", "communication")


class TurnInline(admin.TabularInline):
    model = Turn
    fields = ("role", "text", "status", "ttft_ms", "created_at")
    readonly_fields = fields
    extra = 0
    show_change_link = True


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "character", "title", "created_at", "updated_at")
    list_filter = ("character", "created_at")
    search_fields = ("user__username", "title")
    inlines = [TurnInline]


class PipelineLogInline(admin.TabularInline):
    model = PipelineLog
    fields = ("position", "node", "outcome", "ms", "details")
    readonly_fields = fields
    extra = 0


@admin.register(Turn)
class TurnAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "session",
        "role",
        "short_text",
        "status",
        "step",
        "ttft_ms",
        "total_ms",
        "created_at",
    )
    list_filter = ("role", "status", "spontaneous", "created_at")
    search_fields = ("text", "session__user__username")
    inlines = [PipelineLogInline]

    @admin.display(description="Text")
    def short_text(self, obj: Turn) -> str:
        return obj.text[:80]


@admin.register(PipelineLog)
class PipelineLogAdmin(admin.ModelAdmin):
    list_display = ("turn", "position", "node", "outcome", "ms", "started_at")
    list_filter = ("node", "outcome")
    search_fields = ("outcome",)


@admin.register(PendingQuestion)
class PendingQuestionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "user",
        "agent",
        "kind",
        "status",
        "short_question",
        "created_at",
        "expires_at",
    )
    list_filter = ("agent", "kind", "status")
    search_fields = ("question", "user__username")

    @admin.display(description="Frage")
    def short_question(self, obj: PendingQuestion) -> str:
        return obj.question[:80]


@admin.register(MemoryEntry)
class MemoryEntryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "user",
        "character",
        "kind",
        "short_text",
        "salience",
        "created_at",
        "expires_at",
        "promoted_at",
    )
    list_filter = ("kind", "character", "created_at")
    search_fields = ("text", "user__username")
    # The vector is not for reading; everything else is.
    exclude = ("embedding",)
    readonly_fields = ("source_turn", "session", "provenance", "created_at", "promoted_at")

    @admin.display(description="Text")
    def short_text(self, obj: MemoryEntry) -> str:
        return obj.text[:80]
