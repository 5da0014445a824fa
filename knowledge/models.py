"""Nova's own library (seed 002 §2, seed 004 §3a/§4b; DESIGN.md "Knowledge zone").

Two corpora, never one table: ``KnowledgeEntry`` is what Nova worked out herself, one row per
file in her zone, with the pair at the row and reinforcement columns. The file index
(``files.IndexEntry``) describes files a person released; the two are never merged.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from conversation.models import Character, MemoryEntry, Turn


class KnowledgeEntry(models.Model):
    """One knowledge file of a (user, character) pair. The row follows the file after every
    write (version, summary, embedding, hash); the file is the truth."""

    class Typ(models.TextChoices):
        GESPRAECH = "gespraech", "aus dem Gespräch"
        RECHERCHE = "recherche", "Recherche"
        ERARBEITET = "erarbeitet", "aus einer freigegebenen Datei erarbeitet"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.CASCADE)
    # Relative to the pair's zone folder, POSIX separators.
    path = models.TextField()
    typ = models.CharField(max_length=16, choices=Typ.choices, default=Typ.RECHERCHE)
    topic = models.TextField(blank=True)
    summary = models.TextField(blank=True)
    keywords = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    search_text = models.TextField(blank=True)
    # The same two text search forms as the file index (seed 002 §8.1b).
    search_vector = SearchVectorField(null=True, blank=True)
    search_vector_simple = SearchVectorField(null=True, blank=True)
    topic_embedding = VectorField(dimensions=settings.EMBEDDING_DIM, null=True, blank=True)
    block_map = models.JSONField(default=list, blank=True)
    # Mirrored from the file's "Version: X.Y" line.
    version = models.CharField(max_length=16, blank=True)
    inhalt_hash = models.CharField(max_length=64, blank=True)
    # Reinforcement (seed 004 v0.10: haeufigkeit, gewicht_roh + boost, verstaerkt_am). The
    # effective weight decays with the half-life and is computed, never stored
    # (knowledge.library.effective_weight); salience is never a gate (seed 004 v0.14).
    haeufigkeit = models.PositiveIntegerField(default=1)
    gewicht_roh = models.FloatField(default=1.0)
    verstaerkt_am = models.DateTimeField(null=True, blank=True)
    halbwertszeit_tage = models.FloatField(default=90.0)
    # Provenance of what was learned from released files: [{path, lines, hash}].
    sources = models.JSONField(default=list, blank=True)
    # Set when a source changed since it was learned (seed 004 v0.9 §5.2a).
    quelle_geaendert = models.BooleanField(default=False)
    # Why the row could not follow the file at its last write (empty when it could).
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "Wissensdatei"
        verbose_name_plural = "Wissensdateien"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "character", "path"], name="knowledgeentry_unique_path"
            )
        ]
        indexes = [
            models.Index(fields=["user", "character"]),
            GinIndex(fields=["search_vector"], name="knowledgeentry_fts_de"),
            GinIndex(fields=["search_vector_simple"], name="knowledgeentry_fts_simple"),
            GinIndex(fields=["keywords"], name="knowledgeentry_keywords"),
            HnswIndex(
                name="knowledgeentry_topic_hnsw",
                fields=["topic_embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.path} ({self.version})"


class KnowledgeEdit(models.Model):
    """One edit of a knowledge file: the diff, the hashes, the cause and the mark.

    The row is written *before* the file is replaced (``vorbereitet``: an intent with the
    expected hash after the write) and settled after the file was read back (``geschrieben``).
    A process killed in between leaves an intent that the next writer of the same file settles
    by the file's hash (``geschrieben`` if it landed, ``verworfen`` if not).
    """

    class Outcome(models.TextChoices):
        VORBEREITET = "vorbereitet", "vorbereitet"
        GESCHRIEBEN = "geschrieben", "geschrieben"
        VERWORFEN = "verworfen", "verworfen (nicht angekommen)"
        ZURUECKGENOMMEN = "zurueckgenommen", "zurückgenommen"

    class Cause(models.TextChoices):
        PERSON = "person", "Person"
        NOVA = "nova", "Nova"
        GEDAECHTNIS = "gedaechtnis", "Rückweg aus dem Gedächtnis"
        RUECKNAHME = "ruecknahme", "Rücknahme"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.CASCADE)
    entry = models.ForeignKey(
        KnowledgeEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="edits"
    )
    path = models.TextField()
    tool = models.CharField(max_length=32)
    # "i3" for the mark [i3>] … [<i3]; empty for edits without a mark (metadata, new file).
    mark = models.CharField(max_length=16, blank=True)
    block = models.TextField(blank=True)
    hash_before = models.CharField(max_length=64, blank=True)
    hash_after = models.CharField(max_length=64)
    version_before = models.CharField(max_length=16, blank=True)
    version_after = models.CharField(max_length=16, blank=True)
    diff = models.TextField()
    # The lines undo puts back and the lines it takes out (found exactly once in the file,
    # thanks to the unique mark). Lists of lines, so an empty fragment stays unambiguous.
    fragment_before = models.JSONField(default=list, blank=True)
    fragment_after = models.JSONField(default=list, blank=True)
    # The whole file before the edit, for a byte-exact undo while nothing else changed it.
    text_before = models.TextField(blank=True)
    existed_before = models.BooleanField(default=True)
    cause = models.CharField(max_length=16, choices=Cause.choices, default=Cause.PERSON)
    memory_entry = models.ForeignKey(
        MemoryEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    undoes = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="undone_by"
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.VORBEREITET)
    created_at = models.DateTimeField(default=timezone.now)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "Bearbeitung einer Wissensdatei"
        verbose_name_plural = "Bearbeitungen von Wissensdateien"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "character", "path"]),
            models.Index(fields=["outcome"]),
        ]
        constraints = [
            # A mark names one incorporation of one file (unique per file).
            models.UniqueConstraint(
                fields=["user", "character", "path", "mark"],
                condition=~Q(mark="") & ~Q(outcome="verworfen"),
                name="knowledgeedit_unique_mark",
            )
        ]

    def __str__(self) -> str:
        return f"{self.path} {self.tool} {self.mark} ({self.outcome})"


class RueckwegRun(models.Model):
    """One run of the return path for one memory entry: one row per run, a named outcome.

    A run that decides (``abschliessend``) is unique per memory: two runs write once.
    """

    class Outcome(models.TextChoices):
        EINGEARBEITET = "eingearbeitet", "eingearbeitet"
        VERSTAERKT = "verstaerkt", "verstärkt"
        KEINE_PASSENDE_DATEI = "keine_passende_datei", "keine passende Datei"
        NEUE_DATEI = "neue_datei", "neue Datei angelegt"
        UEBERSPRUNGEN_AUFZEICHNUNGEN = (
            "uebersprungen_aufzeichnungen",
            "übersprungen: Aufzeichnungen",
        )
        NICHT_LANGZEIT = "nicht_langzeit", "nicht im Langzeitgedächtnis"
        SCHON_ERLEDIGT = "schon_erledigt", "schon erledigt"
        LAEUFT_SCHON = "laeuft_schon", "läuft schon"
        FEHLER = "fehler", "Fehler"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE
    )
    character = models.ForeignKey(Character, null=True, blank=True, on_delete=models.CASCADE)
    memory_entry = models.ForeignKey(
        MemoryEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept when the memory is deleted, so the unique decision per memory survives.
    memory_key = models.BigIntegerField()
    outcome = models.CharField(max_length=32, choices=Outcome.choices)
    step = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    abschliessend = models.BooleanField(default=False)
    # "offline" | "modell" | "ersatz_offline" (the model failed; offline decided).
    planner = models.CharField(max_length=16, blank=True)
    planner_step = models.CharField(max_length=64, blank=True)
    candidates = models.JSONField(default=list, blank=True)
    entry = models.ForeignKey(
        KnowledgeEntry, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    edit = models.ForeignKey(
        KnowledgeEdit, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    details = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    ms = models.IntegerField(default=0)

    class Meta:
        verbose_name = "Rückweg-Lauf"
        verbose_name_plural = "Rückweg-Läufe"
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["memory_key"],
                condition=Q(abschliessend=True),
                name="rueckwegrun_one_decision_per_memory",
            )
        ]
        indexes = [models.Index(fields=["memory_key", "outcome"])]

    def __str__(self) -> str:
        return f"Gedächtnis {self.memory_key}: {self.outcome}"
