"""The "Wissen" page: her knowledge files (version, haeufigkeit, sources with the re-opener's
mark) and the edits with their diffs and marks, each undoable through a confirmation (the page
asks the API for the question, shows it, and only a confirmed answer sends ``confirm: true``)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from knowledge import library, marks, selectors
from knowledge.models import KnowledgeEdit
from novaberg.auth import request_user

EDITS_SHOWN = 100


def _edit_row(edit: KnowledgeEdit) -> dict[str, Any]:
    shown = marks.open_mark(int(edit.mark[1:])) if edit.mark[1:].isdigit() else ""
    return {
        "edit": edit,
        "mark": shown,
        "undoable": edit.outcome == KnowledgeEdit.Outcome.GESCHRIEBEN,
        "diff_lines": [
            {"text": line, "kind": "add" if line.startswith("+") else
             "del" if line.startswith("-") else ""}
            for line in edit.diff.split("\n")
            if not line.startswith(("+++", "---"))
        ],
    }  # fmt: skip


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
