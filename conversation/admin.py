"""The conversation in the admin, in German. What happened in a conversation (its messages, the
pipeline's log, the confirmation questions with the exact wording a person saw) is history: it
is shown, never added, changed or deleted here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.forms import ModelForm
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from conversation.models import (
    Character,
    MemoryEntry,
    PendingQuestion,
    PipelineLog,
    Session,
    Turn,
)

# The models' names in German. Set here rather than in their Meta so that the names need no
# migration of this app: the migration state is built from Meta's original attributes, which
# these assignments leave as they are (``makemigrations --check`` stays clean).
GERMAN_NAMES: dict[type[Model], tuple[str, str]] = {
    Character: ("Figur", "Figuren"),
    Session: ("Gespräch", "Gespräche"),
    Turn: ("Nachricht", "Nachrichten"),
    PipelineLog: ("Ablaufschritt", "Ablaufschritte"),
    PendingQuestion: ("Rückfrage", "Rückfragen"),
    MemoryEntry: ("Erinnerung", "Erinnerungen"),
}
for _model, (_one, _many) in GERMAN_NAMES.items():
    _model._meta.verbose_name = _one
    _model._meta.verbose_name_plural = _many


def column(field: str, label: str, *, choice: bool = False) -> Callable[[Any], Any]:
    """A list column showing ``field`` under a German heading (sortable by the field); a
    ``choice`` field shows its German label, not the stored word."""

    @admin.display(description=label, ordering=field)
    def show(obj: Any) -> Any:
        if choice:
            return getattr(obj, f"get_{field}_display")()
        return getattr(obj, field)

    show.__name__ = f"spalte_{field}"
    return show


class ReadOnlyAdmin(admin.ModelAdmin):
    """History: visible to staff, never added, changed or deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Character)
class CharacterAdmin(admin.ModelAdmin):
    list_display = (column("name", "Name"), column("created_at", "angelegt am"))
    search_fields = ("name",)
    fields = ("name", "identity", "sheet", "communication")
    LABELS = {
        "name": "Name",
        "identity": "Identität",
        "sheet": "Charakterbogen",
        "communication": "Kommunikationsstil",
    }
    HELP_TEXTS = {
        "identity": "Wer die Figur ist: so stellt sie sich vor und so spricht sie von sich.",
        "sheet": "Wesen, Haltung, Werte, Humor und Grenzen der Figur.",
        "communication": "Wie die Figur spricht: Ton, Länge der Antworten, Eigenheiten.",
    }

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> type[ModelForm[Any]]:
        kwargs.setdefault("labels", self.LABELS)
        kwargs.setdefault("help_texts", self.HELP_TEXTS)
        return super().get_form(request, obj, change, **kwargs)


class TurnInline(ReadOnlyInline):
    model = Turn
    fields = ("role", "text", "status", "ttft_ms", "created_at")
    readonly_fields = fields
    show_change_link = True


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = (
        column("id", "Nr."),
        column("user", "Person"),
        column("character", "Figur"),
        column("title", "Titel"),
        column("created_at", "begonnen am"),
        column("updated_at", "zuletzt am"),
    )
    list_filter = ("character", "created_at")
    search_fields = ("user__username", "title")
    inlines = [TurnInline]


class PipelineLogInline(ReadOnlyInline):
    model = PipelineLog
    fields = ("position", "node", "outcome", "ms", "details")
    readonly_fields = fields


def inspector_url(turn: Turn) -> str | None:
    """The inspector of the person's message the turn belongs to (Nova's reply: the message
    it answers); None for a turn without one (a spontaneous message of Nova)."""
    if turn.role == Turn.Role.USER:
        return reverse("turn-inspector", args=[turn.pk])
    if turn.reply_to_id is not None:
        return reverse("turn-inspector", args=[turn.reply_to_id])
    return None


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    list_display = (
        column("id", "Nr."),
        column("session", "Gespräch"),
        column("role", "von", choice=True),
        "short_text",
        column("status", "Status", choice=True),
        column("step", "Schritt"),
        column("ttft_ms", "erstes Wort (ms)"),
        column("total_ms", "fertig (ms)"),
        column("created_at", "am"),
        "inspector_link",
    )
    list_filter = ("role", "status", "spontaneous", "created_at")
    search_fields = ("text", "session__user__username")
    readonly_fields = ("inspector_link",)
    inlines = [PipelineLogInline]

    @admin.display(description="Text")
    def short_text(self, obj: Turn) -> str:
        return obj.text[:80]

    @admin.display(description="Inspektor")
    def inspector_link(self, obj: Turn) -> SafeString | str:
        url = inspector_url(obj)
        if url is None:
            return "–"
        # The inspector shows a turn to the person whose conversation it is.
        return format_html('<a href="{}">Ablauf ansehen</a>', url)


@admin.register(PipelineLog)
class PipelineLogAdmin(ReadOnlyAdmin):
    list_display = (
        column("turn", "Nachricht"),
        column("position", "Reihenfolge"),
        column("node", "Schritt"),
        column("outcome", "Ergebnis"),
        column("ms", "Dauer (ms)"),
        column("started_at", "begonnen am"),
    )
    list_filter = ("node", "outcome")
    search_fields = ("outcome",)


@admin.register(PendingQuestion)
class PendingQuestionAdmin(ReadOnlyAdmin):
    """Read-only: the stored wording is what the person's consent refers to."""

    list_display = (
        column("id", "Nr."),
        column("user", "Person"),
        column("agent", "Dienst"),
        column("kind", "Art", choice=True),
        column("status", "Stand", choice=True),
        "short_question",
        column("created_at", "gefragt am"),
        column("expires_at", "gilt bis"),
    )
    list_filter = ("agent", "kind", "status")
    search_fields = ("question", "user__username")

    @admin.display(description="Frage")
    def short_question(self, obj: PendingQuestion) -> str:
        return obj.question[:80]


@admin.register(MemoryEntry)
class MemoryEntryAdmin(admin.ModelAdmin):
    list_display = (
        column("id", "Nr."),
        column("user", "Person"),
        column("character", "Figur"),
        column("kind", "Art", choice=True),
        "short_text",
        column("salience", "Gewicht"),
        column("created_at", "angelegt am"),
        column("expires_at", "vergeht am"),
        column("promoted_at", "ins Langzeitgedächtnis am"),
    )
    list_filter = ("kind", "character", "created_at")
    search_fields = ("text", "user__username")
    # The vector is not for reading; everything else is.
    exclude = ("embedding",)
    readonly_fields = ("source_turn", "session", "provenance", "created_at", "promoted_at")

    @admin.display(description="Text")
    def short_text(self, obj: MemoryEntry) -> str:
        return obj.text[:80]
