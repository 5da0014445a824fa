"""The return path for one memory entry (seed 004 §4b, v0.14, v0.16, v0.17).

Trigger: a memory promoted to long-term memory — the promotion is the proof; no salience gate.
Text: the raw wording reached through the entry's turn (v0.16/v0.17), the entry's own text
only when the turn is gone. Skipped: entries whose provenance is records from released files
(file content does not become her knowledge without a gate, seed 002 §1a.3/§1a.4).

Steps: candidates (the pair's nearest library rows, up to ``KNOWLEDGE_CANDIDATES``) → the
planner (model or offline rule) picks the file or answers "keine passende Datei" → nothing
new in the file: the row is reinforced (``verstaerkt``); else ``block_einfuegen`` at the place
``choose_place`` finds, with a mark, the version bumped, the row reinforced and followed.

New files (seed §9.7 leaves it open; decided here): a memory that no file fits starts a new
knowledge file only when (1) it stands on its own — at least ``KNOWLEDGE_NEW_FILE_MIN_TERMS``
content stems — and (2) its subject came up before: an earlier memory of the same pair ended
``keine_passende_datei`` and shares at least ``KNOWLEDGE_NEW_FILE_MIN_SHARED_TERMS`` content
stems with it. The new file holds both raw wordings under ``## AKTUELL`` (the earlier first),
its title made of the words both share. One stray thought does not start a file (seed 004
v0.9: living knowledge grows by working on a subject, not by a new file per run); a subject
that comes back has earned one.

Idempotent per memory: one deciding run row per memory (a unique constraint), an advisory lock
per memory against two workers at once, and the memory's edits found again after a crash —
an edit that landed is never made twice; the run only completes its bookkeeping.
"""

from __future__ import annotations

import logging
import re
import time
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction

from conversation.models import MemoryEntry
from conversation.pipeline.words import content_words
from knowledge import conf, library
from knowledge.models import KnowledgeEdit, KnowledgeEntry, RueckwegRun
from knowledge.rueckweg.place import adds_nothing, choose_place
from knowledge.rueckweg.planner import DECIDE_FILE, PlannerCandidate, plan
from knowledge.rueckweg.terms import shared, stems_many
from knowledge.selectors import library_candidates, memories_pending_rueckweg
from knowledge.tools import EditCause, block_einfuegen, datei_lesen, datei_schreiben, settle_file
from knowledge.tools.edit import edits_of_memory
from novaberg.embeddings import EmbeddingError, embed_one

logger = logging.getLogger(__name__)

Outcome = RueckwegRun.Outcome
# pg_advisory_lock(classid, objid): classid names the return path ("NK" + 2), objid the memory.
LOCK_CLASS = 0x4E4B02


@dataclass
class RueckwegResult:
    memory_id: int
    outcome: str
    step: str = ""
    reason: str = ""
    run_id: int | None = None
    entry_id: int | None = None
    edit_id: int | None = None
    path: str = ""
    mark: str = ""
    version: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def run_pk(self) -> int:
        """The run row (every finished run logs one; a result without it is a caller's error)."""
        if self.run_id is None:
            raise LookupError(f"no run row: {self.outcome}/{self.step}")
        return self.run_id

    def line(self) -> str:
        """One line for ``manage.py rueckweg``."""
        parts = [f"Gedächtnis {self.memory_id}: {self.outcome}"]
        if self.step:
            parts.append(f"({self.step})")
        if self.path:
            where = self.path + (f" [{self.mark}>]" if self.mark else "")
            parts.append(f"– {where}" + (f", Version {self.version}" if self.version else ""))
        if self.reason:
            parts.append(f"– {self.reason}")
        return " ".join(parts)


class _Run:
    def __init__(self, memory_id: int) -> None:
        self.memory_id = memory_id
        self.memory: MemoryEntry | None = None
        self.started = time.perf_counter()
        self.details: dict[str, Any] = {}
        self.planner = ""
        self.planner_step = ""
        self.candidates: list[dict[str, Any]] = []

    def log(
        self,
        outcome: str,
        *,
        step: str = "",
        reason: str = "",
        final: bool = False,
        entry: KnowledgeEntry | None = None,
        edit_id: int | None = None,
        path: str = "",
        mark: str = "",
        version: str = "",
    ) -> RueckwegResult:
        memory = self.memory
        run = RueckwegRun.objects.create(
            user_id=memory.user_id if memory else None,
            character_id=memory.character_id if memory else None,
            memory_entry=memory,
            memory_key=self.memory_id,
            outcome=outcome,
            step=step,
            reason=reason,
            abschliessend=final,
            planner=self.planner,
            planner_step=self.planner_step,
            candidates=self.candidates,
            entry=entry,
            edit_id=edit_id,
            details=self.details,
            ms=int((time.perf_counter() - self.started) * 1000),
        )
        logger.info(
            "rueckweg memory=%s outcome=%s step=%s",
            self.memory_id,
            outcome,
            step,
            extra={"outcome": outcome, "ms": run.ms},
        )
        return RueckwegResult(
            memory_id=self.memory_id,
            outcome=outcome,
            step=step,
            reason=reason,
            run_id=run.pk,
            entry_id=entry.pk if entry else None,
            edit_id=edit_id,
            path=path or (entry.path if entry else ""),
            mark=mark,
            version=version or (entry.version if entry else ""),
            details=self.details,
        )


def _try_lock(memory_id: int) -> bool:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, memory_id])
        return bool(cur.fetchone()[0])


def _unlock(memory_id: int) -> None:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, memory_id])


def rueckweg_for_memory(*, memory_entry_id: int) -> RueckwegResult:
    """One return-path run for one memory entry; one log row with a named outcome. Never
    raises: an unexpected failure is logged as ``fehler`` with step ``ausnahme``."""
    run = _Run(int(memory_entry_id))
    if not _try_lock(run.memory_id):
        run.memory = MemoryEntry.objects.filter(pk=run.memory_id).first()
        return run.log(Outcome.LAEUFT_SCHON, reason="Ein anderer Lauf bearbeitet diesen Eintrag.")
    try:
        return _execute(run)
    except Exception as exc:  # the contract: a named outcome, never an escaping exception
        logger.exception("rueckweg memory=%s failed", run.memory_id)
        run.details["ausnahme"] = f"{type(exc).__name__}: {exc}"[:500]
        return run.log(Outcome.FEHLER, step="ausnahme", reason="Unerwarteter Fehler im Rückweg.")
    finally:
        _unlock(run.memory_id)


def _finish(
    run: _Run,
    outcome: str,
    *,
    reason: str,
    entry: KnowledgeEntry | None = None,
    edit_id: int | None = None,
    reinforce: bool = False,
    mark: str = "",
) -> RueckwegResult:
    """The deciding row (and the reinforcement) in one transaction: both or neither."""
    try:
        with transaction.atomic():
            if reinforce and entry is not None:
                entry = library.library_reinforce(entry_id=entry.pk)
                run.details["haeufigkeit"] = entry.haeufigkeit
            return run.log(
                outcome, reason=reason, final=True, entry=entry, edit_id=edit_id, mark=mark
            )
    except IntegrityError:
        return run.log(Outcome.SCHON_ERLEDIGT, reason="Ein anderer Lauf hat schon entschieden.")


def _execute(run: _Run) -> RueckwegResult:
    memory = (
        MemoryEntry.objects.select_related("user", "character", "source_turn")
        .filter(pk=run.memory_id)
        .first()
    )
    run.memory = memory
    if memory is None:
        return run.log(Outcome.FEHLER, step="kein_eintrag", reason="Den Eintrag gibt es nicht.")
    decided = RueckwegRun.objects.filter(memory_key=run.memory_id, abschliessend=True).first()
    if decided is not None:
        run.details["entschieden_in"] = decided.pk
        return run.log(
            Outcome.SCHON_ERLEDIGT,
            reason=f"Schon entschieden: {decided.outcome}.",
            entry=decided.entry,
        )
    if memory.kind != MemoryEntry.Kind.LONG or memory.promoted_at is None:
        return run.log(
            Outcome.NICHT_LANGZEIT, reason="Der Eintrag ist nicht ins Langzeitgedächtnis befördert."
        )
    if (memory.provenance or {}).get("quelle") == "aufzeichnungen":
        return _finish(
            run,
            Outcome.UEBERSPRUNGEN_AUFZEICHNUNGEN,
            reason="Der Eintrag stammt aus Aufzeichnungen freigegebener Dateien; die werden "
            "nicht ohne Tor zu meinem Wissen.",
        )
    recovered = _recover(run, memory)
    if recovered is not None:
        return recovered

    turn = memory.source_turn
    text = (turn.text if turn is not None else memory.text).strip()
    run.details["text_quelle"] = "turn" if turn is not None else "eintrag"
    run.details["text"] = text[:500]
    if not text:
        return run.log(Outcome.FEHLER, step="kein_text", reason="Der Eintrag hat keinen Wortlaut.")
    vector = list(memory.embedding) if memory.embedding is not None else None
    if vector is None:
        try:
            vector = embed_one(text)
        except EmbeddingError as exc:
            return run.log(Outcome.FEHLER, step=f"einbettung_{exc.step}", reason=str(exc)[:300])

    user, character = memory.user, memory.character
    hits = library_candidates(user=user, character=character, vector=vector, k=conf.candidates_k())
    run.candidates = [
        {"id": h.entry_id, "path": h.path, "cosine": round(h.cosine or 0.0, 4)} for h in hits
    ]
    memory_terms, term_words = _terms_with_words(text)
    run.details["begriffe"] = memory_terms
    candidates = _planner_candidates(hits)
    decision = plan(
        text=text, memory_terms=memory_terms, term_words=term_words, candidates=candidates
    )
    run.planner, run.planner_step = decision.planner, decision.planner_step
    run.details["begruendung"] = decision.reason

    if decision.decision != DECIDE_FILE or decision.entry_id is None:
        return _no_file(run, memory, text, memory_terms, decision.reason)

    entry = KnowledgeEntry.objects.get(pk=decision.entry_id, user=user, character=character)
    read = datei_lesen(user=user, character=character, path=entry.path)
    if not read.ok:
        return run.log(Outcome.FEHLER, step=f"lesen_{read.step}", reason=read.message, entry=entry)
    if adds_nothing(read.text, text, memory_terms):
        return _finish(
            run,
            Outcome.VERSTAERKT,
            reason=f"{entry.path} sagt das schon; ich verstärke nur den Eintrag.",
            entry=entry,
            reinforce=True,
        )
    place = choose_place(read.text, memory_terms, decision.anchor, decision.position)
    if place is None:
        return run.log(
            Outcome.FEHLER, step="kein_abschnitt", reason=f"{entry.path} hat keinen Abschnitt.",
            entry=entry,
        )  # fmt: skip
    run.details["ort"] = {"anker": place.anchor, "position": place.position, "regel": place.rule}
    cause = EditCause(
        kind=KnowledgeEdit.Cause.GEDAECHTNIS, memory_id=memory.pk, turn_id=memory.source_turn_id
    )
    paragraph = " ".join(text.split())  # one paragraph: content is data, never structure
    where = {"nach": place.anchor} if place.position == "nach" else {"vor": place.anchor}
    result = block_einfuegen(
        user=user, character=character, path=entry.path, text=paragraph, cause=cause, **where
    )
    if not result.ok:
        return run.log(
            Outcome.FEHLER,
            step=str(result.step),
            reason=result.message,
            entry=entry,
            edit_id=result.edit_pk,
        )
    entry.refresh_from_db()
    return _finish(
        run,
        Outcome.EINGEARBEITET,
        reason=decision.reason,
        entry=entry,
        edit_id=result.edit_pk,
        reinforce=True,
        mark=result.mark,
    )


def _recover(run: _Run, memory: MemoryEntry) -> RueckwegResult | None:
    """An earlier run of this memory wrote (or meant to write) and died before deciding: settle
    its intent by the file's hash; a landed edit is completed, never repeated."""
    prior = edits_of_memory(memory_id=memory.pk)
    if not prior:
        return None
    for edit in prior:
        if edit.outcome == KnowledgeEdit.Outcome.VORBEREITET:
            settle_file(user=memory.user, character=memory.character, path=edit.path)
    landed = [e for e in edits_of_memory(memory_id=memory.pk) if e.outcome == "geschrieben"]
    run.details["wiederaufnahme"] = [e.pk for e in prior]
    if not landed:
        return None  # nothing arrived: decide afresh
    edit = landed[-1]
    followed = settle_file(user=memory.user, character=memory.character, path=edit.path)
    if not followed.ok:
        return run.log(Outcome.FEHLER, step=str(followed.step), reason=followed.message)
    entry = KnowledgeEntry.objects.get(pk=followed.entry_pk)
    if edit.tool in ("datei_schreiben", "datei_ueberschreiben"):
        return _finish(
            run, Outcome.NEUE_DATEI, reason="Neue Datei (nach Wiederaufnahme).", entry=entry,
            edit_id=edit.pk,
        )  # fmt: skip
    return _finish(
        run,
        Outcome.EINGEARBEITET,
        reason="Eingearbeitet (nach Wiederaufnahme).",
        entry=entry,
        edit_id=edit.pk,
        reinforce=True,
        mark=edit.mark,
    )


def _terms_with_words(text: str) -> tuple[list[str], dict[str, str]]:
    """The memory's content stems, and for each stem a word of the text that carries it."""
    words = sorted(content_words(text))
    surface = {w.lower(): w for w in re.findall(r"[^\W\d_]+", text)}
    stems = stems_many([text, *words])
    term_words: dict[str, str] = {}
    for word, word_stems in zip(words, stems[1:], strict=True):
        for stem in word_stems:
            term_words.setdefault(stem, surface.get(word, word))
    return stems[0], term_words


def _planner_candidates(hits: list[Any]) -> list[PlannerCandidate]:
    texts: list[str] = []
    for h in hits:
        texts.append(" ".join([h.topic, " ".join(h.headings), " ".join(h.keywords)]))
        texts.append(h.summary)
    stems = stems_many(texts)
    return [
        PlannerCandidate(
            entry_id=h.entry_id,
            path=h.path,
            topic=h.topic,
            summary=h.summary,
            cosine=round(float(h.cosine or 0.0), 4),
            keywords=h.keywords,
            headings=h.headings,
            strong_terms=stems[2 * i],
            summary_terms=stems[2 * i + 1],
        )
        for i, h in enumerate(hits)
    ]


# --- no file fits ------------------------------------------------------------------------------


def _slug(title: str) -> str:
    text = title.replace("ß", "ss")
    for a, b in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("Ä", "Ae"), ("Ö", "Oe"), ("Ü", "Ue")):
        text = text.replace(a, b)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:60].strip("-") or "wissen"


def _no_file(
    run: _Run, memory: MemoryEntry, text: str, memory_terms: list[str], reason: str
) -> RueckwegResult:
    earlier = _earlier_unassigned(memory, memory_terms)
    if earlier is None:
        return _finish(run, Outcome.KEINE_PASSENDE_DATEI, reason=reason)
    earlier_memory, earlier_text, common = earlier
    run.details["neue_datei_mit"] = earlier_memory.pk
    words_a = {w.lower(): w for w in re.findall(r"[^\W\d_]+", earlier_text)}
    words_b = content_words(text)
    common_words = [words_a[w] for w in sorted(content_words(earlier_text) & words_b)]
    common_words.sort(key=lambda w: (not w[:1].isupper(), -len(w)))
    title = ", ".join(common_words[:3]) or " ".join(text.split()[:6])
    base = _slug(title)
    user, character = memory.user, memory.character
    path = f"{base}.md"
    n = 2
    while KnowledgeEntry.objects.filter(user=user, character=character, path=path).exists():
        path = f"{base}-{n}.md"
        n += 1
    body = "\n\n".join(" ".join(t.split()) for t in (earlier_text, text))
    cause = EditCause(
        kind=KnowledgeEdit.Cause.GEDAECHTNIS, memory_id=memory.pk, turn_id=memory.source_turn_id
    )
    result = datei_schreiben(
        user=user,
        character=character,
        path=path,
        thema=title[:1].upper() + title[1:],
        inhalt=body,
        typ=KnowledgeEntry.Typ.GESPRAECH,
        cause=cause,
    )
    if not result.ok:
        return run.log(Outcome.FEHLER, step=str(result.step), reason=result.message)
    entry = KnowledgeEntry.objects.get(pk=result.entry_pk)
    return _finish(
        run,
        Outcome.NEUE_DATEI,
        reason=f"{reason} Das Thema kam zum zweiten Mal ({', '.join(common[:5])}); ich "
        f"lege {path} an.",
        entry=entry,
        edit_id=result.edit_pk,
    )


def _used_for_new_files(memory: MemoryEntry) -> list[int]:
    """Earlier memories that already started a file: a subject starts one file, not two."""
    used = RueckwegRun.objects.filter(
        user_id=memory.user_id, character_id=memory.character_id, outcome=Outcome.NEUE_DATEI
    ).values_list("details__neue_datei_mit", flat=True)
    return [int(pk) for pk in used if pk is not None]


def _earlier_unassigned(
    memory: MemoryEntry, memory_terms: list[str]
) -> tuple[MemoryEntry, str, list[str]] | None:
    if len(memory_terms) < conf.new_file_min_terms():
        return None
    runs = (
        RueckwegRun.objects.filter(
            user_id=memory.user_id,
            character_id=memory.character_id,
            abschliessend=True,
            outcome=Outcome.KEINE_PASSENDE_DATEI,
            memory_entry__isnull=False,
        )
        .exclude(memory_key=memory.pk)
        .exclude(memory_key__in=_used_for_new_files(memory))
        .select_related("memory_entry__source_turn")
        .order_by("started_at", "id")
    )
    found = []
    for r in runs:
        other = r.memory_entry
        assert other is not None
        found.append((other, (other.source_turn.text if other.source_turn else other.text)))
    if not found:
        return None
    stems = stems_many([t for _, t in found])
    need = conf.new_file_min_shared_terms()
    for (other, other_text), other_terms in zip(found, stems, strict=True):
        common = shared(memory_terms, other_terms)
        if len(set(common)) >= need:
            return other, other_text.strip(), common
    return None


def rueckweg_pending(*, limit: int | None = None) -> list[RueckwegResult]:
    """One run per pending promoted memory, in this process (``manage.py rueckweg``)."""
    return [
        rueckweg_for_memory(memory_entry_id=pk) for pk in memories_pending_rueckweg(limit=limit)
    ]
