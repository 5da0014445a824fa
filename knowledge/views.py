"""The "Wissen" page: her knowledge files (version, how often confirmed, sources with the
re-opener's mark) and the edits with their diffs and marks, each undoable through a
confirmation (the page asks the API for the question, shows it word for word, and only the
explicit "Ja" sends ``confirm: true``)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from knowledge import library, marks, selectors
from knowledge.models import KnowledgeEdit
from novaberg.auth import request_user

EDITS_SHOWN = 100
# What each write tool did, in plain words (knowledge/tools/edit.py, undo.py).
TOOL_LABELS = {
    "datei_schreiben": "neue Datei angelegt",
    "datei_ueberschreiben": "Datei neu geschrieben",
    "block_ersetzen": "Abschnitt ersetzt",
    "block_einfuegen": "Abschnitt eingefügt",
    "block_anfuegen": "Abschnitt ergänzt",
    "str_replace_in_block": "Stelle in einem Abschnitt geändert",
    "metadaten_aktualisieren": "Angaben zur Datei aktualisiert",
    "rueckgaengig": "Änderung zurückgenommen",
}
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def _diff_lines(diff: str) -> list[dict[str, str]]:
    """A unified diff as lines a person reads: a hunk header becomes "ab Zeile n"."""
    out: list[dict[str, str]] = []
    for line in diff.split("\n"):
        if line.startswith(("+++", "---")):
            continue
        hunk = _HUNK.match(line)
        if hunk:
            out.append({"text": f"ab Zeile {hunk.group(1)}", "kind": "hunk"})
        elif line.startswith("+"):
            out.append({"text": line, "kind": "add"})
        elif line.startswith("-"):
            out.append({"text": line, "kind": "del"})
        elif line or out:
            out.append({"text": line, "kind": "ctx"})
    while out and out[-1] == {"text": "", "kind": "ctx"}:
        out.pop()
    return out


def _edit_row(edit: KnowledgeEdit) -> dict[str, Any]:
    shown = marks.open_mark(int(edit.mark[1:])) if edit.mark[1:].isdigit() else ""
    lines = _diff_lines(edit.diff)
    return {
        "edit": edit,
        "mark": shown,
        "tool": TOOL_LABELS.get(edit.tool, edit.tool),
        "undoable": edit.outcome == KnowledgeEdit.Outcome.GESCHRIEBEN,
        "diff_lines": lines,
        "added": sum(1 for line in lines if line["kind"] == "add"),
        "removed": sum(1 for line in lines if line["kind"] == "del"),
    }


@login_required
def wissen_page(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    entries = list(selectors.entry_list(user=user))
    states = selectors.source_states(user=user, entries=entries)
    rows = [
        {
            "entry": e,
            "weight": round(library.entry_effective_weight(e), 2),
            "sources": states.get(e.pk, []),
        }
        for e in entries
    ]
    edits = [_edit_row(e) for e in selectors.edit_list(user=user)[:EDITS_SHOWN]]
    return render(request, "knowledge/wissen.html", {"rows": rows, "edits": edits})
