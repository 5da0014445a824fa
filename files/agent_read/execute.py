"""Request path, step 2: run the read tools and answer for [AUFGABE] with citations.

Reads only — nothing here writes. "Nothing fits" is a full answer that says what was searched;
a cut read says that it was cut.
"""

from __future__ import annotations

from typing import Any

from conversation.agents import AgentContext, AgentResult
from conversation.vocabulary import Status
from files import reading
from files.agent_read.classify import ReadRequest
from files.retrieval import records_from_hits
from files.search import hybrid_search

SEARCH_LIMIT = 8  # the request path asks for more than K


def _lines(n: object) -> str:
    return "eine Zeile" if n == 1 else f"{n} Zeilen"


def _cut_note(result: reading.ReadResult) -> str:
    if not result.cut:
        return ""
    if result.extra.get("cut_chars"):
        # Cut in characters (one long line, or many): the lines shown end inside the last one.
        return (
            f" (gekürzt: höchstens {result.extra['cut_chars']} Zeichen je Lesen, gezeigt aus "
            f"Zeilen {result.line_start}-{result.line_end}; "
            f"die Datei hat {_lines(result.extra.get('total_lines', '?'))})"
        )
    return (
        f" (gekürzt: höchstens {_lines(result.line_end - result.line_start + 1)} je Lesen; "
        f"die Datei hat {_lines(result.extra.get('total_lines', '?'))})"
    )


def _record(result: reading.ReadResult) -> dict[str, Any]:
    return {
        "root_id": result.root_id,
        "path": result.path,
        "lines": f"{result.line_start}-{result.line_end}",
        "citation": result.citation,
    }


def _found_entry(record: dict[str, Any]) -> str:
    """One search hit: its citation, then the cited lines themselves (line by line), then —
    labelled as such — the summary of the whole file (a section's citation must not
    carry another section's content)."""
    label = " (archiviert — abgelöst, nicht geltend)" if record["archived"] else ""
    # Hit strength and channel stay in ``records`` (inspector, API); the text is read by a person.
    out = [f"- {record['citation']}{label}:"]
    excerpt = str(record.get("excerpt") or "")
    if excerpt:
        if record.get("excerpt_cut"):
            out.append(f"  (gekürzt, gezeigt: Zeilen {record.get('excerpt_lines')})")
        out.extend(f"  > {line}".rstrip() for line in excerpt.splitlines())
    else:
        out.append("  (Der Text dieser Zeilen ist gerade nicht lesbar.)")
    if record.get("summary"):
        out.append(f"  Zur ganzen Datei {record['path']}: {record['summary']}")
    return "\n".join(out)


def _searched_scope(ctx: AgentContext) -> str:
    roots = reading.pair_roots(user=ctx.user, character=ctx.character)
    files = sum(r.entries.filter(state="vorhanden").count() for r in roots)
    noun = "Datei" if files == 1 else "Dateien"
    where = (
        "einem freigegebenen Ordner" if len(roots) == 1 else f"{len(roots)} freigegebenen Ordnern"
    )
    return f"{files} {noun} in {where}"


def _missing_file(ctx: AgentContext, name: str) -> AgentResult:
    return AgentResult(
        Status.DONE,
        f"Eine Datei „{name}“ finde ich in deinen freigegebenen Verzeichnissen nicht "
        f"(gesucht in {_searched_scope(ctx)}).",
        step="datei_unbekannt",
    )


def run(ctx: AgentContext, request: ReadRequest) -> AgentResult:
    if request.kind in {"notizen", "suche"}:
        return _search(ctx, request)
    entry = reading.find_entry(user=ctx.user, character=ctx.character, name=request.file)
    if entry is None:
        return _missing_file(ctx, request.file)
    if request.kind == "zeilen":
        result = reading.zeilen_lesen(
            user=ctx.user,
            character=ctx.character,
            path=entry.rel_path,
            start=request.line_start,
            end=request.line_end,
            root_id=entry.root_id,
        )
    elif request.kind == "abschnitt":
        result = reading.block_lesen(
            user=ctx.user, character=ctx.character, entry=entry, block=request.block
        )
    else:
        level = 2 if request.kind == "gliederung" else 1
        result = reading.zoom(user=ctx.user, character=ctx.character, entry=entry, level=level)
    if not result.ok:
        return AgentResult(Status.FAILED, result.message, step=result.step)
    note = reading.changed_note(result)
    heading = result.extra.get("heading")
    title = f" („{heading}“)" if heading else ""
    text = f"Aus {result.citation}{title}{_cut_note(result)}:\n{result.text}" + (
        f"\n{note}" if note else ""
    )
    return AgentResult(Status.DONE, text, step="gelesen", records=[_record(result)])


def _search(ctx: AgentContext, request: ReadRequest) -> AgentResult:
    from novaberg.embeddings import EmbeddingError, embed_one

    query = request.query
    parts: list[str] = []
    records: list[dict[str, Any]] = []
    if request.kind == "suche":
        grep = reading.datei_grep(user=ctx.user, character=ctx.character, pattern=query)
        if grep.status != "ok":
            return AgentResult(Status.FAILED, grep.message, step=grep.step)
        if grep.matches:
            mode = "genau" if grep.mode == "exakt" else "ohne Rücksicht auf Groß/Klein"
            lines = [f"- {m['path']}:{m['line']}: {m['text']}" for m in grep.matches]
            cut = ""
            if grep.cut:
                cut = (
                    " Die Suche wurde abgebrochen "
                    + ("nach 50 Fundzeilen" if grep.cut_reason == "zeilen" else "(Zeitlimit)")
                    + "; es kann mehr geben."
                )
            found_in = "1 Zeile" if len(grep.matches) == 1 else f"{len(grep.matches)} Zeilen"
            parts.append(
                f"„{grep.pattern}“ ({mode}) steht in {found_in}:{cut}\n" + "\n".join(lines)
            )
            records.extend(
                {
                    "root_id": m["root_id"],
                    "path": m["path"],
                    "lines": f"{m['line']}-{m['line']}",
                    "citation": f"{m['path']}:{m['line']}",
                }
                for m in grep.matches
            )
            return AgentResult(Status.DONE, "\n".join(parts), step="gefunden", records=records)
    try:
        vector: list[float] | None = embed_one(query)
    except EmbeddingError:
        vector = None  # the lexical channel still answers
    outcome = hybrid_search(
        user=ctx.user,
        character=ctx.character,
        query_vector=vector,
        text=query,
        limit=SEARCH_LIMIT,
    )
    found = records_from_hits(
        user=ctx.user,
        character=ctx.character,
        hits=outcome.hits,
        query_vector=vector,
        stems=outcome.query_lexemes,
    )
    if not found:
        how = "wörtlich, ohne Groß/Klein, " if request.kind == "suche" else ""
        return AgentResult(
            Status.DONE,
            f"Zu „{query}“ habe ich in deinen Unterlagen nichts Passendes gefunden. Gesucht "
            f"habe ich {how}im Volltext, in den Stichwörtern und nach Ähnlichkeit, in "
            f"{_searched_scope(ctx)}.",
            step="nichts_gefunden",
        )
    text = f"In deinen Unterlagen steht zu „{query}“:\n" + "\n".join(_found_entry(r) for r in found)
    return AgentResult(
        Status.DONE,
        text,
        step="gefunden",
        records=[
            {k: r[k] for k in ("root_id", "path", "lines", "citation", "channel", "strength")}
            for r in found
        ],
    )
