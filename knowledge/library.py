"""Services on the library rows (``KnowledgeEntry``): follow the file, reinforce, weigh.

The row follows the file after every write — version, summary, keywords, embedding, hash —
and is read back before the write counts as done. Enrichment is extraction (no model call):
the file's title is the topic, ``Zusammenfassung:`` in the header or else the first paragraph
below the header is the summary, ``Stichwörter:`` plus TF-IDF terms are the keywords.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.contrib.postgres.search import SearchVector
from django.db import transaction
from django.db.models import ExpressionWrapper, F, FloatField, Func, Value
from django.db.models.functions import Coalesce, Extract, Now
from django.utils import timezone

from conversation.models import Character
from knowledge import conf, document, marks
from knowledge.models import KnowledgeEntry
from knowledge.structure import Block, block_map, enrichment
from novaberg.embeddings import EmbeddingError, embed_one

logger = logging.getLogger(__name__)

SEARCH_TEXT_MAX = 20000
MAX_KEYWORDS = 12


@dataclass(frozen=True)
class RowResult:
    ok: bool
    entry: KnowledgeEntry | None
    step: str = ""  # "einbettung" | "nicht_nachgelesen"
    message: str = ""


def _fields(rel_path: str, text: str, blocks: list[Block]) -> dict[str, Any]:
    clean = marks.strip_marks(text)
    lines = clean.split("\n")
    head_end = document.header_end(lines)
    body = "\n".join(lines[head_end:])
    extracted = enrichment(body, rel_path, block_map(body))
    title_at = document.title_index(lines)
    topic = extracted["topic"]
    if title_at is not None:
        topic = lines[title_at].lstrip().lstrip("#").strip().rstrip("#").strip() or topic
    header = document.header_fields(lines)
    summary = header["Zusammenfassung"][1] if "Zusammenfassung" in header else ""
    summary = summary or extracted["summary"]
    keywords: list[str] = []
    if "Stichwörter" in header:
        keywords = [k.strip() for k in header["Stichwörter"][1].split(",") if k.strip()]
    for term in extracted["keywords"]:
        if term.lower() not in {k.lower() for k in keywords}:
            keywords.append(term)
    keywords = [k[:100] for k in keywords[:MAX_KEYWORDS]]
    headings = " ".join(b.heading for b in blocks if b.kind == "section" and b.heading)
    search_text = "\n".join([rel_path, topic, summary, " ".join(keywords), headings, clean])
    return {
        "topic": topic[:500],
        "summary": summary[:2000],
        "keywords": keywords,
        "search_text": search_text[:SEARCH_TEXT_MAX],
        "embedding_text": " ".join(p for p in (topic, summary, ", ".join(keywords)) if p),
    }


def library_row_refresh(
    *,
    user: User,
    character: Character,
    rel_path: str,
    text: str,
    content_hash: str,
    typ: str | None = None,
) -> RowResult:
    """Make the pair's row for ``rel_path`` follow ``text`` (created if missing); verified by
    reading the row back. An embedding failure keeps the row's old vector and says so."""
    blocks = block_map(text)
    fields = _fields(rel_path, text, blocks)
    version = document.version_of(text)
    step, message = "", ""
    vector: list[float] | None
    try:
        vector = embed_one(fields["embedding_text"] or rel_path)
    except EmbeddingError as exc:
        vector = None
        step, message = "einbettung", f"einbettung: {exc.step}"
        logger.warning("knowledge row %s: embedding failed: %s", rel_path, exc)
    now = timezone.now()
    defaults: dict[str, Any] = {
        "topic": fields["topic"],
        "summary": fields["summary"],
        "keywords": fields["keywords"],
        "search_text": fields["search_text"],
        "block_map": [b.as_json() for b in blocks],
        "version": version,
        "inhalt_hash": content_hash,
        "last_error": message,
        "updated_at": now,
    }
    if vector is not None:
        defaults["topic_embedding"] = vector
    with transaction.atomic():
        entry, created = KnowledgeEntry.objects.select_for_update().get_or_create(
            user=user,
            character=character,
            path=rel_path,
            defaults={
                **defaults,
                "typ": typ or KnowledgeEntry.Typ.RECHERCHE,
                "halbwertszeit_tage": conf.half_life_days(),
                "created_at": now,
            },
        )
        if not created:
            if typ:
                defaults["typ"] = typ
            KnowledgeEntry.objects.filter(pk=entry.pk).update(**defaults)
        KnowledgeEntry.objects.filter(pk=entry.pk).update(
            search_vector=SearchVector(Value(fields["search_text"]), config="german"),
            search_vector_simple=SearchVector(Value(fields["search_text"]), config="simple"),
        )
        entry = KnowledgeEntry.objects.get(pk=entry.pk)
    if entry.inhalt_hash != content_hash or entry.version != version:
        return RowResult(False, entry, "nicht_nachgelesen", "die Zeile folgt der Datei nicht")
    if step:
        return RowResult(False, entry, step, message)
    return RowResult(True, entry)


def library_row_delete(*, user: User, character: Character, rel_path: str) -> int:
    deleted, _ = KnowledgeEntry.objects.filter(
        user=user, character=character, path=rel_path
    ).delete()
    return deleted


def effective_weight(
    *, gewicht_roh: float, halbwertszeit_tage: float, since: datetime, now: datetime | None = None
) -> float:
    """gewicht_roh · ½^(age / half-life), age counted from the last reinforcement."""
    now = now or timezone.now()
    age_days = max(0.0, (now - since).total_seconds() / 86400.0)
    return gewicht_roh * math.pow(0.5, age_days / max(halbwertszeit_tage, 1e-6))


def entry_effective_weight(entry: KnowledgeEntry, now: datetime | None = None) -> float:
    return effective_weight(
        gewicht_roh=entry.gewicht_roh,
        halbwertszeit_tage=entry.halbwertszeit_tage,
        since=entry.verstaerkt_am or entry.created_at,
        now=now,
    )


def effective_weight_expression() -> ExpressionWrapper:
    """The same formula in SQL, for ``.annotate(effektives_gewicht=…)``."""
    age_days = Extract(Now() - Coalesce(F("verstaerkt_am"), F("created_at")), "epoch") / 86400.0
    decay = Func(
        Value(0.5), age_days / F("halbwertszeit_tage"), function="POWER", output_field=FloatField()
    )
    return ExpressionWrapper(F("gewicht_roh") * decay, output_field=FloatField())


@transaction.atomic
def library_reinforce(*, entry_id: int, now: datetime | None = None) -> KnowledgeEntry:
    """ "Das Zugehörige verstärkt": haeufigkeit + 1, the decayed weight plus a boost becomes the
    new raw weight (so the curve never jumps down), verstaerkt_am = now."""
    now = now or timezone.now()
    entry = KnowledgeEntry.objects.select_for_update().get(pk=entry_id)
    current = entry_effective_weight(entry, now)
    KnowledgeEntry.objects.filter(pk=entry_id).update(
        haeufigkeit=F("haeufigkeit") + 1,
        gewicht_roh=current + conf.reinforce_boost(),
        verstaerkt_am=now,
    )
    return KnowledgeEntry.objects.get(pk=entry_id)
