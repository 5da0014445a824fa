from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from conversation.vocabulary import (
    QUESTION_KIND_LABELS,
    QUESTION_STATUS_LABELS,
    STATUS_LABELS,
    QuestionKind,
    QuestionStatus,
    Status,
    choices,
)

DEFAULT_CHARACTER_SHEET = """Wesen: neugierig, warm, direkt; sie denkt mit, statt nur zu antworten.
Haltung: eine Gefährtin auf Augenhöhe, keine Dienerin; sie hat eigene Gedanken und sagt sie.
Werte: Ehrlichkeit vor Gefälligkeit; sie sagt, wenn sie etwas nicht weiß.
Humor: leise, trocken, nie auf Kosten des Gegenübers.
Grenzen: sie erfindet nichts; was aus Unterlagen stammt, nennt sie als Aufzeichnung."""


class Character(models.Model):
    """A character Nova can be; identity and character sheet go into [IDENTITAET]."""

    name = models.CharField(max_length=100, unique=True)
    identity = models.TextField(help_text="Identität: wer die Figur ist (für [IDENTITAET]).")
    sheet = models.TextField(
        "Charakterbogen",
        blank=True,
        default=DEFAULT_CHARACTER_SHEET,
        help_text="Wesen, Haltung, Werte, Humor, Grenzen der Figur (für [IDENTITAET]).",
    )
    communication = models.TextField(
        blank=True, help_text="Kommunikationsstil (für [KOMMUNIKATION])."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.name


class Session(models.Model):
    """One conversation of a person with a character."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.PROTECT)
    title = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["user", "-updated_at"])]

    def __str__(self) -> str:
        return f"Session {self.pk} ({self.user_id})"


class Turn(models.Model):
    """One message: the person's (role=user) or Nova's (role=assistant).

    The person's turn carries the pipeline outcome (``status``) and the PipelineLog rows; Nova's
    reply turn points back to it with ``reply_to``.
    """

    class Role(models.TextChoices):
        USER = "user", "Person"
        ASSISTANT = "assistant", "Nova"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="turns")
    role = models.CharField(max_length=16, choices=Role.choices)
    text = models.TextField()
    spontaneous = models.BooleanField(default=False)
    reply_to = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="replies"
    )
    status = models.CharField(max_length=16, choices=choices(Status, STATUS_LABELS), blank=True)
    step = models.CharField(max_length=64, blank=True)
    # Composer content and responder text are both kept: their deviation is measurable.
    composer_text = models.TextField(blank=True)
    ttft_ms = models.IntegerField(null=True, blank=True)
    total_ms = models.IntegerField(null=True, blank=True)
    records = models.JSONField(default=list, blank=True)
    # For the turn inspector: the exact messages composer and responder were sent, the memories
    # shown in [GEDAECHTNIS], the tribunal's and the citation check's findings.
    prompts = models.JSONField(default=dict, blank=True)
    memories = models.JSONField(default=list, blank=True)
    checks = models.JSONField(default=dict, blank=True)
    # Share of content words in the reply that were not in the composer's content (0..1).
    deviation = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    # The process running a ``laufend`` turn (host, pid namespace, pid, start time;
    # conversation/reaper.py): a turn whose process died is closed as ``unterbrochen``.
    owner = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["session", "created_at"]),
            # The reaper's query: the few turns still running.
            models.Index(
                fields=["status"],
                name="conv_turn_running",
                condition=models.Q(status=Status.RUNNING.value),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:40]}"


class PipelineLog(models.Model):
    """One row per node per turn: a named outcome, never silence."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="pipeline")
    node = models.CharField(max_length=32)
    outcome = models.CharField(max_length=64)
    details = models.JSONField(default=dict, blank=True)
    ms = models.IntegerField(default=0)
    started_at = models.DateTimeField(default=timezone.now)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["turn_id", "position", "id"]
        indexes = [models.Index(fields=["node", "outcome"])]

    def __str__(self) -> str:
        return f"{self.node}: {self.outcome} ({self.ms} ms)"


class PendingQuestion(models.Model):
    """An open confirmation question (durable; survives restarts; expires).

    ``question`` holds the exact wording the person saw; ``payload`` the action to run on
    consent. ``status`` moves open → executed / dismissed / expired / replaced exactly once
    (the row is locked while an answer is read, so two racing answers cannot both execute).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.CASCADE)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="questions")
    agent = models.CharField(max_length=32)
    kind = models.CharField(
        max_length=16,
        choices=choices(QuestionKind, QUESTION_KIND_LABELS),
        default=QuestionKind.YES_NO,
    )
    question = models.TextField()
    payload = models.JSONField(default=dict)
    status = models.CharField(
        max_length=16,
        choices=choices(QuestionStatus, QUESTION_STATUS_LABELS),
        default=QuestionStatus.OPEN,
    )
    result = models.JSONField(default=dict, blank=True)
    asked_count = models.PositiveSmallIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["session", "status"])]

    def __str__(self) -> str:
        return f"{self.agent}/{self.kind}: {self.question[:50]}"

    @property
    def is_expired(self) -> bool:
        return timezone.now() >= self.expires_at


class MemoryEntry(models.Model):
    """Nova's own memory of a (user, character) pair: short-term (per session, expires) and
    long-term (promoted). Searched with the one turn vector; shown in [GEDAECHTNIS]."""

    class Kind(models.TextChoices):
        SHORT = "kzg", "Kurzzeitgedächtnis"
        LONG = "lzg", "Langzeitgedächtnis"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.CASCADE)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL)
    source_turn = models.ForeignKey(Turn, null=True, blank=True, on_delete=models.SET_NULL)
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.SHORT)
    text = models.TextField()
    # Where a memory came from records, the citation stays with it (seed 002 §1a.4).
    provenance = models.JSONField(default=dict, blank=True)
    embedding = VectorField(dimensions=384, null=True, blank=True)
    salience = models.FloatField(default=0.5)
    recall_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    promoted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["user", "character", "kind"]),
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:50]}"
