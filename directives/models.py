"""Directives: the person's absolute rules for Nova (seed 000), bi-temporal and audited.

A directive's text never changes in place (seed 000 §5.2): an update deactivates the old row
and inserts a new one that points back with ``replaces``; delete deactivates; reactivate
activates again. Every step of every request is kept in ``DirectiveStep`` with the previous
state of the row (seed 000 §5.2: ``{"gelesen": false}`` where there was none).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class Directive(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="directives",
        verbose_name="Person",
    )
    text = models.TextField("Anweisung", help_text="Was Nova immer oder nie tun soll.")
    context = models.TextField(
        "Zusammenhang",
        blank=True,
        default="",
        help_text="Worauf sich die Regel bezieht, wenn sie sich aus dem Gespräch ergab.",
    )
    active = models.BooleanField("gilt", default=True)
    created_at = models.DateTimeField("angelegt am", default=timezone.now)
    changed_at = models.DateTimeField("geändert am", null=True, blank=True)
    replaces = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="replaced_by",
        verbose_name="ersetzt",
        help_text="Die frühere Fassung, die diese Fassung abgelöst hat.",
    )

    class Meta:
        verbose_name = "Direktive"
        verbose_name_plural = "Direktiven"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["user", "active"], name="directive_user_active")]

    def __str__(self) -> str:
        state = "aktiv" if self.active else "inaktiv"
        return f"{self.text[:60]} ({state})"

    def snapshot(self) -> dict[str, object]:
        """The row as it is now, for the audit trail."""
        return {
            "gelesen": True,
            "id": self.pk,
            "text": self.text,
            "context": self.context,
            "active": self.active,
            "changed_at": self.changed_at.isoformat() if self.changed_at else None,
            "replaces": self.replaces_id,
        }


class DirectiveStep(models.Model):
    """One step of one request (chat or API) on the directives of a person."""

    class Step(models.TextChoices):
        CLASSIFIED = "klassifiziert", "klassifiziert"
        VALIDATED = "validiert", "validiert"
        ASKED = "gefragt", "gefragt"
        ANSWERED = "beantwortet", "beantwortet"
        EXECUTED = "ausgefuehrt", "ausgeführt"
        VERIFIED = "verifiziert", "verifiziert"
        FAILED = "fehlgeschlagen", "fehlgeschlagen"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="directive_steps",
        verbose_name="Person",
    )
    directive = models.ForeignKey(
        Directive,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="steps",
        verbose_name="Direktive",
    )
    request_id = models.CharField("Auftrag", max_length=36, db_index=True)
    step = models.CharField("Schritt", max_length=16, choices=Step.choices)
    action = models.CharField("Aktion", max_length=16, blank=True)
    source = models.CharField("Weg", max_length=8, default="chat")  # "chat" | "api"
    outcome = models.CharField("Ergebnis", max_length=64, blank=True)
    pending_id = models.IntegerField("Rückfrage", null=True, blank=True, db_index=True)
    previous = models.JSONField("vorheriger Zustand", default=dict, blank=True)
    details = models.JSONField("Einzelheiten", default=dict, blank=True)
    created_at = models.DateTimeField("am", default=timezone.now)

    class Meta:
        verbose_name = "Protokollschritt"
        verbose_name_plural = "Protokollschritte"
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["user", "step", "-created_at"], name="dstep_user_step")]

    def __str__(self) -> str:
        return f"{self.step} {self.action} {self.outcome}"
