"""Step 2: run the request — read her library, learn from a released file, or (after consent)
delete a paragraph of a knowledge file through the write layer, with a mark.

- fragen: a library search for the query (its own embedding of the query: on the task path the
  enricher does not run), answered with file, version, the matching section and the learned
  sources with the re-opener's mark. Reads only.
- lernen: ``knowledge.learn.learn_from_file`` (her own zone; no question — it is undoable and
  shown on the Wissen page, like the return path's edits). A file described instead of named
  ("Präge dir die Notizen zum Hochbeet ein") is the one released file whose path and topic
  share the most stems with the description; a tie or no match is said, never guessed.
- loeschen: the paragraph is found first (the pair's files, paragraphs of the sections, most
  shared stems with the query; a tie is refused, never guessed); the gate asks with the exact
  paragraph; on consent ``str_replace_in_block`` removes it, leaving the mark ``[iN>][<iN]``
  where it stood (undoable by that mark). A paragraph that is itself one incorporation
  (``[iN>] … [<iN]``) is taken out by undoing that mark instead.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Any

from conversation import gate
from conversation.agents import AgentContext, AgentResult
from conversation.models import PendingQuestion
from conversation.vocabulary import Status
from files.models import FileRoot, IndexEntry
from knowledge import marks
from knowledge.agent.classify import KnowledgeRequest
from knowledge.context import _excerpt
from knowledge.learn import learn_from_file
from knowledge.models import KnowledgeEdit, KnowledgeEntry
from knowledge.rueckweg.terms import shared, stems_many
from knowledge.selectors import library_search, source_states
from knowledge.structure import block_map, sections
from knowledge.tools import EditCause, datei_lesen, knowledge_mark_undo, str_replace_in_block
from novaberg.embeddings import EmbeddingError, embed_one

logger = logging.getLogger(__name__)

AGENT_NAME = "wissen"
SEARCH_LIMIT = 5
_WHOLE_MARK = re.compile(r"^\[i(\d+)>\]\s?(.*?)\s?\[<i\1\]$", re.DOTALL)


def _no_library(ctx: AgentContext) -> bool:
    return not KnowledgeEntry.objects.filter(user=ctx.user, character=ctx.character).exists()


# --- fragen -------------------------------------------------------------------------------------


def ask_library(ctx: AgentContext, request: KnowledgeRequest) -> AgentResult:
    if _no_library(ctx):
        return AgentResult(
            Status.DONE,
            "Ich habe noch keine eigenen Wissensdateien; zu „"
            f"{request.query}“ weiß ich aus meinem Wissen also nichts.",
            step="keine_bibliothek",
        )
    try:
        vector: list[float] | None = embed_one(request.query)
    except EmbeddingError:
        vector = None  # the lexical channel still answers
    found = library_search(
        user=ctx.user, character=ctx.character, vector=vector, text=request.query,
        k=SEARCH_LIMIT,
    )  # fmt: skip
    if not found.hits:
        return AgentResult(
            Status.DONE,
            f"Zu „{request.query}“ steht nichts in meinen Wissensdateien (gesucht nach "
            "Ähnlichkeit und in den Stichwörtern).",
            step="nichts_gefunden",
            data={"log": found.log},
        )
    terms = stems_many([request.query])[0]
    entries = list(
        KnowledgeEntry.objects.filter(
            user=ctx.user, character=ctx.character, pk__in=[h.entry_id for h in found.hits]
        )
    )
    states = source_states(user=ctx.user, entries=entries)
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    for hit in found.hits:
        read = datei_lesen(user=ctx.user, character=ctx.character, path=hit.path)
        heading, excerpt = _excerpt(read.text, terms) if read.ok else ("", "")
        version = read.version if read.ok and read.version else hit.version
        where = f" (Abschnitt „{heading}“)" if heading else ""
        line = f"- {hit.path}, Version {version}{where}: {excerpt or hit.summary}"
        src = [
            f"{s.path}:{s.lines}" + (f" — {s.label}" if s.label else "")
            for s in states.get(hit.entry_id, [])
        ]
        if src:
            line += f" (gelernt aus {', '.join(src)})"
        lines.append(line)
        files.append({"path": hit.path, "version": version})
    text = f"In meinem eigenen Wissen steht zu „{request.query}“:\n" + "\n".join(lines)
    return AgentResult(Status.DONE, text, step="gefunden", data={"files": files})


# --- lernen -------------------------------------------------------------------------------------


def described_files(ctx: AgentContext, description: str) -> list[str]:
    """The released files (relative paths) that best match a description: most shared stems
    between the description and the file's path and topic; all with the top score."""
    entries = list(
        IndexEntry.objects.filter(
            root__user=ctx.user, root__character=ctx.character,
            root__state=FileRoot.State.ACTIVE, state=IndexEntry.State.PRESENT,
        ).values_list("rel_path", "topic")[:2000]
    )  # fmt: skip
    if not entries:
        return []
    texts = [re.sub(r"[/_.-]+", " ", p) + " " + (t or "") for p, t in entries]
    stems = stems_many([description, *texts])
    scored = [
        (len(set(shared(stems[0], own))), path)
        for (path, _t), own in zip(entries, stems[1:], strict=True)
    ]
    best = max((s for s, _p in scored), default=0)
    return [p for s, p in scored if best and s == best]


def learn(ctx: AgentContext, request: KnowledgeRequest) -> AgentResult:
    name = request.file
    if not name:
        candidates = described_files(ctx, request.query)
        if not candidates:
            return AgentResult(
                Status.FAILED,
                f"Eine freigegebene Datei zu „{request.query}“ finde ich nicht; nenn mir bitte "
                "ihren Namen.",
                step="datei_unbekannt",
            )
        if len(candidates) > 1:
            listing = "\n".join(f"- {p}" for p in candidates[:10])
            return AgentResult(
                Status.FAILED,
                f"Zu „{request.query}“ passen {len(candidates)} Dateien gleich gut; ich rate "
                f"nicht. Welche meinst du?\n{listing}",
                step="mehrdeutig",
            )
        name = candidates[0]
    result = learn_from_file(user=ctx.user, character=ctx.character, name=name, turn_id=ctx.turn_id)
    data = {
        "path": result.path,
        "version": result.version,
        "source": {"path": result.source_path, "lines": result.source_lines,
                   "hash": result.source_hash},
        "distiller": result.distiller,
        "distiller_step": result.distiller_step,
    }  # fmt: skip
    if result.status == "fehler":
        return AgentResult(Status.FAILED, result.message, step=result.step, data=data)
    return AgentResult(Status.DONE, result.message, step=result.step, data=data)


# --- loeschen -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Paragraph:
    path: str
    block: int  # the section's ordinal (1-based)
    heading: str
    text: str  # exact lines, joined by "\n"
    score: int


def _paragraphs(text: str) -> list[tuple[int, str, str]]:
    """(section ordinal, heading, paragraph) for every paragraph below the header."""
    lines = text.split("\n")
    out: list[tuple[int, str, str]] = []
    for block in sections(block_map(text)):
        if not block.heading:
            continue
        body = lines[block.line_start : block.line_end]
        current: list[str] = []
        for line in [*body, ""]:
            if line.strip():
                current.append(line)
            elif current:
                out.append((block.ordinal, block.heading, "\n".join(current)))
                current = []
    return out


def find_paragraphs(ctx: AgentContext, query: str) -> list[Paragraph]:
    """The best-matching paragraphs of the pair's knowledge files (all with the top score)."""
    found: list[tuple[str, int, str, str]] = []
    for path in KnowledgeEntry.objects.filter(user=ctx.user, character=ctx.character).values_list(
        "path", flat=True
    ):
        read = datei_lesen(user=ctx.user, character=ctx.character, path=path)
        if not read.ok:
            continue
        for ordinal, heading, para in _paragraphs(read.text):
            found.append((path, ordinal, heading, para))
    if not found:
        return []
    stems = stems_many([query, *(marks.strip_marks(p[3]) for p in found)])
    query_terms = stems[0]
    scored = [
        Paragraph(path, ordinal, heading, para, len(set(shared(query_terms, para_terms))))
        for (path, ordinal, heading, para), para_terms in zip(found, stems[1:], strict=True)
    ]
    best = max((p.score for p in scored), default=0)
    if best == 0:
        return []
    return [p for p in scored if p.score == best]


def _shown(text: str) -> str:
    flat = " ".join(marks.strip_marks(text).split())
    return flat if len(flat) <= 300 else flat[:299].rsplit(" ", 1)[0] + " …"


def delete_ask(ctx: AgentContext, request: KnowledgeRequest) -> AgentResult:
    if _no_library(ctx):
        return AgentResult(
            Status.DONE, "Ich habe noch keine eigenen Wissensdateien.", step="keine_bibliothek"
        )
    hits = find_paragraphs(ctx, request.query)
    if not hits:
        return AgentResult(
            Status.DONE,
            f"Einen Absatz über „{request.query}“ finde ich in meinen Wissensdateien nicht; "
            "ich habe nichts geändert.",
            step="kein_absatz",
        )
    if len(hits) > 1:
        listing = "\n".join(f"- {h.path}, Abschnitt „{h.heading}“: {_shown(h.text)}" for h in hits)
        return AgentResult(
            Status.FAILED,
            f"Zu „{request.query}“ passen {len(hits)} Absätze gleich gut; ich rate nicht. "
            f"Sag mir genauer, welchen du meinst:\n{listing}",
            step="mehrdeutig",
        )
    hit = hits[0]
    question = (
        f"Soll ich in {hit.path} (Abschnitt „{hit.heading}“) diesen Absatz aus meinem Wissen "
        f"löschen? „{_shown(hit.text)}“ Ich kann es danach über die Marke zurücknehmen."
    )
    return gate.ask(
        ctx,
        agent=AGENT_NAME,
        question=question,
        payload={"action": "absatz_loeschen", "path": hit.path, "block": hit.block,
                 "heading": hit.heading, "text": hit.text},
    )  # fmt: skip


def delete_execute(ctx: AgentContext, pending: PendingQuestion) -> AgentResult:
    """On consent: remove the paragraph of ``pending.payload``; verified by the write layer's
    read back (a result that is not ok is reported as ``fehler``, never as success)."""
    payload = pending.payload or {}
    path, text, block = payload.get("path"), payload.get("text"), payload.get("block")
    if not isinstance(path, str) or not isinstance(text, str) or not isinstance(block, int):
        return AgentResult(Status.FAILED, "Die Rückfrage ist unlesbar.", step="kennung_unlesbar")
    cause = EditCause(kind=KnowledgeEdit.Cause.PERSON, turn_id=ctx.turn_id)
    whole = _WHOLE_MARK.match(text.strip())
    if whole is not None and not marks.has_mark_syntax(whole.group(2)):
        result = knowledge_mark_undo(
            user=ctx.user, character=ctx.character, path=path, mark=f"i{whole.group(1)}",
            cause=cause,
        )  # fmt: skip
    elif marks.has_mark_syntax(text):
        return AgentResult(
            Status.FAILED,
            "In diesem Absatz steckt eine meiner Einarbeitungen; die nehme ich auf der "
            "Wissen-Seite über ihre Marke zurück, nicht durch Löschen.",
            step="enthaelt_marke",
        )
    else:
        result = str_replace_in_block(
            user=ctx.user, character=ctx.character, path=path, block=block, alt=text, neu="",
            cause=cause,
        )  # fmt: skip
    if not result.ok:
        return AgentResult(Status.FAILED, result.message, step=str(result.step))
    shown = marks.open_mark(int(result.mark[1:])) if result.mark[1:].isdigit() else ""
    note = f" Die Stelle trägt die Marke {shown}." if shown else ""
    return AgentResult(
        Status.DONE,
        f"Ich habe den Absatz aus {path} gelöscht; die Datei ist jetzt Version "
        f"{result.version}.{note}",
        step="geloescht",
        data={"path": path, "version": result.version, "edit_id": result.edit_id,
              "mark": result.mark},
    )  # fmt: skip
