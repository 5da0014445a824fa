"""Offline handlers of the conversation nodes (the deterministic backend, DESIGN.md).

The composer answers extractively from the blocks it sees (records with their citation); the
responder says that content as it is, applying the Sie/du form the directives demand where it
can, and never adds a fact.
"""

from __future__ import annotations

import re
from typing import Any

from conversation.address import to_sie
from novaberg import llm

# A record from a folder that is still being read (the record says so; files/retrieval.py).
STILL_INDEXING = (
    "Der Ordner wird gerade noch gelesen – vielleicht steht darin noch mehr, als ich bisher "
    "gefunden habe."
)
OFFLINE_NO_CONTENT = (
    "Ich bin gerade im Offline-Modus, ohne Sprachmodell. Ich kann deine Regeln verwalten, "
    "in deinen freigegebenen Ordnern nachsehen und dir sagen, was dort steht – frei "
    "plaudern kann ich so nicht."
)

_SIEZEN = re.compile(r"\b(siez\w*|sie-form|per sie|förmlich)", re.I)


def _record_line(record: dict[str, Any]) -> str:
    """One record in the offline answer: the cited lines themselves (the excerpt of the best
    block, already bounded by lines), so the answer says what stands at the citation; the
    file's summary only where no excerpt could be read. The lines keep their breaks (CSV rows,
    list items), each continuation indented under the citation."""
    excerpt = str(record.get("excerpt") or "").strip()
    archived = " (archiviert – abgelöst, nicht geltend)" if record.get("archived") else ""
    if not excerpt:
        said = str(record.get("summary") or "").strip()[:300]
        return f"- {record.get('citation')}: {said}{archived}"
    first, *rest = [line.rstrip() for line in excerpt.splitlines()]
    quoted = "\n".join([first, *(f"  {line}".rstrip() for line in rest)])
    return f"- {record.get('citation')}: „{quoted}“{archived}"


def composer(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    """Extractive content from what the composer sees: the task, records, memory."""
    task = str(hints.get("task") or "").strip()
    if task:
        return task
    parts: list[str] = []
    records = list(hints.get("records") or [])
    if records:
        lines = [_record_line(r) for r in records]
        parts.append(
            "In deinen Aufzeichnungen steht dazu – das sind Aufzeichnungen, nicht meine "
            "Erinnerung, und sie können veraltet sein:\n" + "\n".join(lines)
        )
        if any(r.get("folder_still_indexing") for r in records):
            parts.append(STILL_INDEXING)
    # What other composer sources say offline (their ``offline_text``), in prompt order.
    parts.extend(str(text) for text in hints.get("contributed") or [])
    memories = list(hints.get("memories") or [])
    if memories:
        said = [
            m["text"]
            if (m.get("provenance") or {}).get("quelle") == "aufzeichnungen"
            else f"Du hast mir gesagt: „{m['text']}“"
            for m in memories[:3]
        ]
        parts.append("Ich erinnere mich: " + " ".join(said))
    return "\n\n".join(parts) or OFFLINE_NO_CONTENT


def responder(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    """Offline voice: says the composer's content as it is; never adds a fact."""
    content = str(hints.get("content") or "").strip() or OFFLINE_NO_CONTENT
    if _SIEZEN.search(str(hints.get("directives") or "")):
        content = to_sie(content)
    return content


llm.register_offline("composer", composer)
llm.register_offline("responder", responder)
