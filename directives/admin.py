"""Directives in the admin: every rule with its update chain and its audit steps, read-only.

A rule changes only through the person (chat or rules page: the question, her consent, the
gate) or the API, each verified and audited; the admin offers no second way, and the history
(the rows of a chain and every step) is never edited or deleted here."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html_join
from django.utils.safestring import SafeString

from conversation.admin import ReadOnlyAdmin, ReadOnlyInline
from directives import selectors
from directives.models import Directive, DirectiveStep


class DirectiveStepInline(ReadOnlyInline):
    model = DirectiveStep
    fields = ("created_at", "step", "action", "source", "outcome", "pending_id", "previous")
    readonly_fields = fields


@admin.register(Directive)
class DirectiveAdmin(ReadOnlyAdmin):
    list_display = ("id", "user", "text", "active", "created_at", "changed_at", "replaces")
    list_filter = ("active", "user")
    search_fields = ("text", "context", "user__username")
    fields = (
        "user",
        "text",
        "context",
        "active",
        "created_at",
        "changed_at",
        "replaces",
        "history_chain",
    )
    readonly_fields = fields
    inlines = [DirectiveStepInline]

    @admin.display(description="Historie (älteste zuerst)")
    def history_chain(self, obj: Directive) -> SafeString | str:
        if obj.pk is None:
            return "-"
        chain = selectors.directive_chain(user=obj.user, directive_id=obj.pk) or []
        return format_html_join(
            "",
            "<div>#{} {} — {}</div>",
            ((row.pk, "aktiv" if row.active else "inaktiv", row.text) for row in chain),
        )


@admin.register(DirectiveStep)
class DirectiveStepAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "user", "step", "action", "source", "outcome", "directive")
    list_filter = ("step", "action", "source", "user")
    search_fields = ("request_id", "user__username")
    readonly_fields = [f.name for f in DirectiveStep._meta.fields]
