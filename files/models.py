"""Released directories (roots) and their index (seeds 002 and 004; DESIGN.md "Files").

A root belongs to a (user, character) pair; index rows belong to the root only and never carry
the pair, so every read of the index goes through the pair's roots.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from conversation.models import Character


class FileRoot(models.Model):
    class Eigentum(models.TextChoices):
        NUTZER = "nutzer", "Material der Person"
        FIGUR = "figur", "Novas eigenes Material"

    class State(models.TextChoices):
        # Released through the API/UI, dry run shown, waiting for the explicit confirm.
        REQUESTED = "angefragt", "angefragt"
        ACTIVE = "aktiv", "aktiv"
        SUSPENDED = "stillgelegt", "stillgelegt"
        # The released path no longer resolves to itself inside the boundary (swapped for a
        # link, moved): not followed at read or index time until the person releases it again.
        PATH_CHANGED = "pfad_geaendert", "Pfad geändert"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    character = models.ForeignKey(Character, on_delete=models.CASCADE)
    # Always the resolved path (symlinks, "..", "~" resolved before the boundary check).
    path = models.TextField()
    # The released directory's identity (st_dev, st_ino as signed 64-bit), taken from the
    # descriptor the dry run walked (files.fsaccess): every read and watcher run opens the
    # root without following a link and refuses a directory that is not this one
    # (``pfad_geaendert``). NULL for a root released before it was stored: the first check
    # that passes the boundary records it (files.boundary.root_open).
    dir_device = models.BigIntegerField(null=True, blank=True)
    dir_inode = models.BigIntegerField(null=True, blank=True)
    eigentum = models.CharField(max_length=8, choices=Eigentum.choices)
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    include_globs = models.JSONField(default=list, blank=True)
    exclude_globs = models.JSONField(default=list, blank=True)
    file_count_at_release = models.IntegerField(default=0)
    # The dry run the person saw before consenting: files, skipped {reason: n}, total_bytes.
    dry_run = models.JSONField(default=dict, blank=True)
    released_at = models.DateTimeField(null=True, blank=True)
    # Progress of the running / last watcher run: {"done", "total", "running"}.
    progress = models.JSONField(default=dict, blank=True)
    # Counts of the last run: new, changed, unchanged, gone, skipped {reason: n}, errors.
    last_counts = models.JSONField(default=dict, blank=True)
    last_run_started_at = models.DateTimeField(null=True, blank=True)
    last_run_finished_at = models.DateTimeField(null=True, blank=True)
    last_full_hash_at = models.DateTimeField(null=True, blank=True)
    # The run whose progress/counts the JSON fields above publish (updated in the same
    # transaction as that IndexRun row, so progress and counts never belong to two runs).
    last_run = models.ForeignKey(
        "IndexRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Set when the directory itself is missing/unreadable at the last run (rows are kept).
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    changed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "freigegebener Ordner"
        verbose_name_plural = "freigegebene Ordner"
        constraints = [
            models.UniqueConstraint(
                fields=["user", "character", "path"], name="fileroot_unique_per_pair"
            )
        ]
        indexes = [models.Index(fields=["user", "character", "state"])]

    def __str__(self) -> str:
        return f"{self.path} ({self.state})"


class IndexEntry(models.Model):
    """One file of a root, learned by content hash."""

    class State(models.TextChoices):
        PRESENT = "vorhanden", "vorhanden"
        GONE = "fort", "fort"

    root = models.ForeignKey(FileRoot, on_delete=models.CASCADE, related_name="entries")
    rel_path = models.TextField()
    format = models.CharField(max_length=16, blank=True)
    size = models.BigIntegerField(default=0)
    mtime = models.DateTimeField(null=True, blank=True)
    # Fast-path fingerprint (size, mtime_ns, ctime_ns, inode): a tool can set mtime back, not ctime.
    mtime_ns = models.BigIntegerField(null=True, blank=True)
    ctime_ns = models.BigIntegerField(null=True, blank=True)
    inode = models.BigIntegerField(null=True, blank=True)
    inhalt_hash = models.CharField(max_length=64, blank=True)
    # NULL (not "") until learned: the issue names "null until learned" as the state.
    zuletzt_gelernt_hash = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    topic = models.TextField(blank=True)
    summary = models.TextField(blank=True)
    keywords = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    line_count = models.IntegerField(default=0)
    search_text = models.TextField(blank=True)
    # Two text search forms (seed 002 §8.1b: German compounds need more than one form).
    search_vector = SearchVectorField(null=True, blank=True)
    search_vector_simple = SearchVectorField(null=True, blank=True)
    topic_embedding = VectorField(dimensions=384, null=True, blank=True)
    block_map = models.JSONField(default=list, blank=True)
    archived = models.BooleanField(default=False)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PRESENT)
    first_seen_at = models.DateTimeField(default=timezone.now)
    last_seen_at = models.DateTimeField(default=timezone.now)
    indexed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "Indexeintrag"
        verbose_name_plural = "Indexeinträge"
        constraints = [
            models.UniqueConstraint(fields=["root", "rel_path"], name="indexentry_unique_path")
        ]
        indexes = [
            models.Index(fields=["root", "state"]),
            models.Index(fields=["inhalt_hash"]),
            GinIndex(fields=["search_vector"], name="indexentry_fts_de"),
            GinIndex(fields=["search_vector_simple"], name="indexentry_fts_simple"),
            GinIndex(fields=["keywords"], name="indexentry_keywords"),
            HnswIndex(
                name="indexentry_topic_hnsw",
                fields=["topic_embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return self.rel_path


class IndexBlock(models.Model):
    """A block of the block map with its own hash, so an edit re-embeds only that block."""

    entry = models.ForeignKey(IndexEntry, on_delete=models.CASCADE, related_name="blocks")
    ordinal = models.IntegerField()
    kind = models.CharField(max_length=16, default="section")
    heading = models.TextField(blank=True)
    line_start = models.IntegerField()
    line_end = models.IntegerField()
    block_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=384, null=True, blank=True)
    # The block's parsed text (heading line included), its keywords (heading/title words plus
    # its own extracted terms) and the two text-search forms of IndexEntry, so a question can
    # reach the section that answers it (DESIGN.md "Files": block-level rows).
    text = models.TextField(blank=True)
    keywords = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    search_vector = SearchVectorField(null=True, blank=True)
    search_vector_simple = SearchVectorField(null=True, blank=True)

    class Meta:
        verbose_name = "Indexabschnitt"
        verbose_name_plural = "Indexabschnitte"
        constraints = [
            models.UniqueConstraint(fields=["entry", "ordinal"], name="indexblock_unique_ordinal")
        ]
        indexes = [
            GinIndex(fields=["search_vector"], name="indexblock_fts_de"),
            GinIndex(fields=["search_vector_simple"], name="indexblock_fts_simple"),
            GinIndex(fields=["keywords"], name="indexblock_keywords"),
            HnswIndex(
                name="indexblock_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.entry_id}#{self.ordinal} {self.line_start}-{self.line_end}"


class IndexRun(models.Model):
    """One watcher run of one root: its state, progress and counts in one row, so what a
    person sees (progress, counts, times) always belongs to the same run. The heartbeat moves
    with the progress; a run whose heartbeat is stale lost its worker and is requeued."""

    class State(models.TextChoices):
        WAITING = "wartend", "wartet"
        RUNNING = "laufend", "läuft"
        DONE = "fertig", "fertig"
        ABORTED = "abgebrochen", "abgebrochen"
        REQUEUED = "neu_eingereiht", "neu eingereiht"
        ROOT_MISSING = "verzeichnis_fehlt", "Verzeichnis fehlt"
        NOT_ACTIVE = "nicht_aktiv", "nicht aktiv"
        # Another run of the same root held the lock; that run covers this one.
        SKIPPED = "entfallen", "entfallen"

    root = models.ForeignKey(FileRoot, on_delete=models.CASCADE, related_name="runs")
    state = models.CharField(max_length=20, choices=State.choices, default=State.WAITING)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # {"done": n, "total": n}
    progress = models.JSONField(default=dict, blank=True)
    # Same shape as FileRoot.last_counts.
    counts = models.JSONField(default=dict, blank=True)
    full_hash = models.BooleanField(default=False)
    celery_task_id = models.CharField(max_length=64, blank=True)
    # What happened, in German, for the roots page (e.g. why a run was requeued).
    note = models.TextField(blank=True)
    # The run that was started again for this one after its worker was lost.
    requeued_as = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name = "Indexlauf"
        verbose_name_plural = "Indexläufe"
        indexes = [
            models.Index(fields=["root", "-created_at"]),
            models.Index(fields=["state", "heartbeat_at"]),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} root {self.root_id} ({self.state})"


class RetrievalCalibration(models.Model):
    """The dense floor is a property of the embedding model and corpus, never a constant
    (seed 004 v0.7/v0.8): stored per model with the measurement that produced it."""

    embedding_model = models.CharField(max_length=200, unique=True)
    dense_floor = models.FloatField()
    note = models.TextField()
    distributions = models.JSONField(default=dict, blank=True)
    measured_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "Kalibrierung der Suche"
        verbose_name_plural = "Kalibrierungen der Suche"

    def __str__(self) -> str:
        return f"{self.embedding_model}: {self.dense_floor:.3f}"
