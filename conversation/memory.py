"""Nova's memory of a (user, character) pair: short-term (kzg, expires) and long-term (lzg).

Reads take the pair and the ONE turn vector of the enricher; writes store the person's own
statements (with that same vector: never a second embedding of the same text) and, for a reply
built from records, only *that* she looked something up and where — the content stays in the
file (seed 002 §1a.3 "Auskunft"), and the provenance survives in the stored wording (§1a.4).

What is never stored: the content of injected blocks ([REGELN] and every block another app
contributes through ``conversation.context``: [DIREKTIVEN], [AUFZEICHNUNGEN], …) or Nova's
restatement of them, and recalls of what was just shown in [GEDAECHTNIS] (an audit of
a popular memory layer found most stored memories were restated system content and re-extracted
recalls).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.db.models.functions import Least
from django.utils import timezone
from pgvector.django import CosineDistance

from conversation import context, understanding
from conversation.models import Character, MemoryEntry, Session, Turn
from conversation.pipeline.words import content_words, overlap

logger = logging.getLogger(__name__)

RESTATEMENT_SHARE = 0.6  # share of a candidate's content words found in one injected block
RECALL_SHARE = 0.8  # share of a candidate's content words found in one recalled memory
RECALL_SALIENCE_STEP = 0.1
_FIRST_PERSON = re.compile(r"\b(ich|mein|meine|meinem|meinen|meiner|mir|mich|wir|unser)\b", re.I)


# --- selectors ----------------------------------------------------------------------------------


def memory_search(
    *,
    user: User,
    character: Character,
    vector: list[float],
    exclude_turn_ids: list[int] | None = None,
    k: int | None = None,
    floor: float | None = None,
) -> list[dict[str, Any]]:
    """The pair's live memories nearest to the turn vector, at least ``floor`` cosine.

    Entries that came from turns still in the visible conversation are left out: they stand in
    [GESPRAECHSVERLAUF] already, and showing them twice invites re-extraction.
    """
    k = k or settings.MEMORY_K
    floor = settings.MEMORY_FLOOR if floor is None else floor
    now = timezone.now()
    rows = (
        MemoryEntry.objects.filter(user=user, character=character, embedding__isnull=False)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .exclude(source_turn_id__in=exclude_turn_ids or [])
        .annotate(distance=CosineDistance("embedding", vector))
        .filter(distance__lte=1.0 - floor)
        .order_by("distance", "id")[:k]
    )
    return [
        {
            "id": row.pk,
            "kind": row.kind,
            "text": row.text,
            "cosine": round(1.0 - float(row.distance), 3),
            "created_at": row.created_at.isoformat(),
            "provenance": row.provenance,
        }
        for row in rows
    ]


# --- extraction (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    text: str
    salience: float
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass
class Extraction:
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)

    def skip(self, who: str, reason: str) -> None:
        self.skipped.append({"quelle": who, "grund": reason})


def _restates_block(text: str, blocks: dict[str, str]) -> str | None:
    # Blocks whose content must not become a memory (the person or Nova restating them).
    injected = context.injected_blocks()
    if any(f"[{name}]" in text for name in (*injected, "GEDAECHTNIS")):
        return "blockmarke"
    for name in injected:
        body = blocks.get(name) or ""
        if body and overlap(text, body) >= RESTATEMENT_SHARE:
            return f"wiederholt_{name.lower().replace(' ', '_')}"
    return None


def _salience(text: str) -> float:
    score = 0.4
    if _FIRST_PERSON.search(text):
        score += 0.2
    words = text.split()
    # German capitalises nouns; a capitalised word after the first, or a number, is a detail.
    if any(w[:1].isupper() for w in words[1:]) or any(ch.isdigit() for ch in text):
        score += 0.2
    return round(min(score, 1.0), 2)


def memory_extract(
    *,
    person_text: str,
    reply: str,
    records: list[dict[str, Any]],
    blocks: dict[str, str],
    recalled: list[dict[str, Any]],
) -> Extraction:
    """Decide what of one finished turn becomes memory (no writes here)."""
    out = Extraction()
    text = person_text.strip()
    if len(content_words(text)) < 2:
        out.skip("person", "nichts_merkenswert")
    elif text.endswith("?"):
        out.skip("person", "nur_frage")
    elif understanding.addressed_to_nova(text):
        # Issue 28: an order, a command to Nova or a missed order is no fact about the person
        # ("Ich will nicht, dass du Fluchwörter benutzt" must not come back as a memory).
        out.skip("person", "auftrag_an_nova")
    elif reason := _restates_block(text, blocks):
        out.skip("person", reason)
    elif any(overlap(text, m["text"]) >= RECALL_SHARE for m in recalled):
        out.skip("person", "schon_erinnert")
    else:
        out.candidates.append(Candidate(text=text, salience=_salience(text)))

    citations = [r["citation"] for r in records if r.get("citation")]
    used = [
        r["citation"]
        for r in records
        if r.get("citation")
        and (r["citation"] in reply or overlap(reply, str(r.get("excerpt") or "")) >= 0.3)
    ]
    if used:
        # seed 002 §1a.4: the provenance is in the wording itself, not only in a side field.
        where = ", ".join(used)
        wording = (
            "Auskunft aus Aufzeichnungen, nicht aus eigener Erinnerung: "
            f"Zu „{text[:200]}“ habe ich in den Aufzeichnungen nachgesehen ({where})."
        )
        out.candidates.append(
            Candidate(
                text=wording,
                salience=0.5,
                provenance={"quelle": "aufzeichnungen", "citations": used},
            )
        )
    elif citations:
        out.skip("nova", "aufzeichnungen_nicht_benutzt")
    else:
        # Nova's own reply restates the composer's content (memory, rules, directives): storing
        # it would be re-extraction. The person's words carry the turn.
        out.skip("nova", "antwort_nicht_gespeichert")
    return out


# --- services -----------------------------------------------------------------------------------


@transaction.atomic
def memory_store(
    *,
    user: User,
    character: Character,
    session: Session,
    turn: Turn,
    candidates: list[Candidate],
    vector: list[float],
) -> list[int]:
    """Store candidates as short-term memory with the turn vector; verified by reading back."""
    expires = timezone.now() + timedelta(days=settings.MEMORY_SHORT_TTL_DAYS)
    created = [
        MemoryEntry.objects.create(
            user=user,
            character=character,
            session=session,
            source_turn=turn,
            kind=MemoryEntry.Kind.SHORT,
            text=c.text,
            provenance=c.provenance,
            embedding=vector,
            salience=c.salience,
            expires_at=expires,
        ).pk
        for c in candidates
    ]
    found = MemoryEntry.objects.filter(pk__in=created, user=user, character=character).count()
    if found != len(created):
        raise RuntimeError(f"memory write not verified: {found} of {len(created)} rows read back")
    return created


# --- promotion listeners ------------------------------------------------------------------------

PromotionListener = Callable[[list[int]], None]
_PROMOTION_LISTENERS: dict[str, PromotionListener] = {}


def on_promoted(name: str, callback: PromotionListener) -> None:
    """Call ``callback(ids)`` after the commit that promoted memories to long-term memory (the
    knowledge app's return path registers here in its ``ready()``; conversation imports no
    app). Registering the same ``name`` again replaces the callback."""
    _PROMOTION_LISTENERS[name] = callback


def _notify_promoted(ids: list[int]) -> None:
    for name, callback in list(_PROMOTION_LISTENERS.items()):
        try:
            callback(list(ids))
        except Exception:
            # After the commit: the promotion stands; a listener that failed is named here, and
            # its own periodic run picks the memories up later.
            logger.exception("promotion listener %s failed for memories %s", name, ids)


@transaction.atomic
def memory_recall(*, user: User, character: Character, ids: list[int]) -> list[int]:
    """Memories shown in [GEDAECHTNIS] gain salience; those reaching the threshold are promoted
    to long-term memory (no expiry). Returns the ids promoted now."""
    if not ids:
        return []
    mine = MemoryEntry.objects.filter(pk__in=ids, user=user, character=character)
    mine.update(
        recall_count=F("recall_count") + 1,
        salience=Least(F("salience") + RECALL_SALIENCE_STEP, 1.0),
    )
    promote = list(
        mine.filter(
            kind=MemoryEntry.Kind.SHORT, salience__gte=settings.MEMORY_PROMOTE_SALIENCE
        ).values_list("pk", flat=True)
    )
    if promote:
        MemoryEntry.objects.filter(pk__in=promote).update(
            kind=MemoryEntry.Kind.LONG, promoted_at=timezone.now(), expires_at=None
        )
        transaction.on_commit(lambda: _notify_promoted(promote))
    return promote


def memory_expire(*, user: User, character: Character) -> int:
    """Delete the pair's expired short-term entries; returns how many."""
    deleted, _ = MemoryEntry.objects.filter(
        user=user, character=character, kind=MemoryEntry.Kind.SHORT, expires_at__lte=timezone.now()
    ).delete()
    return deleted


def memory_expire_due() -> int:
    """Delete every pair's expired short-term entries (the beat task's service); returns how
    many. Long-term entries have no expiry and are never touched."""
    deleted, _ = MemoryEntry.objects.filter(
        kind=MemoryEntry.Kind.SHORT, expires_at__lte=timezone.now()
    ).delete()
    return deleted
