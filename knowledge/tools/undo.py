"""Undo by mark (seed 004 §3a; DESIGN.md "Knowledge zone": every incorporation is reversible).

- The file is exactly as the edit left it (hash): the bytes from before the edit come back,
  byte for byte, version line included (a new file is removed again).
- Something else changed the file since, but the marked fragment is untouched: only the
  fragment is put back (that block is then byte-identical to before) and the version is bumped.
- The marked fragment itself was changed or is gone: refused with a reason (``block_veraendert``);
  an edit without a mark (metadata, whole file) is refused once the file changed
  (``datei_seitdem_geaendert``). Nothing is guessed.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from conversation.models import Character
from knowledge import marks
from knowledge.fileio import sha256
from knowledge.models import KnowledgeEdit
from knowledge.tools.edit import ABSENT, Change, EditCause, _Context, run_edit, settle_file
from knowledge.tools.result import Step, ToolResult, fail, refused
from knowledge.zone import schreibziel_pruefen


def _locate(lines: list[str], fragment: list[str]) -> list[int]:
    n = len(fragment)
    if n == 0:
        return []
    return [i for i in range(len(lines) - n + 1) if lines[i : i + n] == fragment]


def knowledge_edit_undo(*, user: User, edit_id: int, cause: EditCause | None = None) -> ToolResult:
    """Undo one edit of the requesting person's pair files. Another person's edit reads as
    missing."""
    edit = KnowledgeEdit.objects.filter(pk=edit_id, user=user).select_related("character").first()
    if edit is None:
        return fail(Step.KEINE_BEARBEITUNG, "Diese Bearbeitung kenne ich nicht.")
    if edit.outcome == KnowledgeEdit.Outcome.VORBEREITET:
        settle_file(user=user, character=edit.character, path=edit.path)
        edit.refresh_from_db()
    if edit.outcome == KnowledgeEdit.Outcome.ZURUECKGENOMMEN:
        return fail(
            Step.SCHON_ZURUECKGENOMMEN,
            "Diese Bearbeitung ist schon zurückgenommen.",
            path=edit.path,
        )
    if edit.outcome != KnowledgeEdit.Outcome.GESCHRIEBEN:
        return fail(
            Step.KEINE_BEARBEITUNG,
            "Diese Bearbeitung ist nie in der Datei angekommen; es gibt nichts zurückzunehmen.",
            path=edit.path,
        )
    shown = marks.open_mark(int(edit.mark[1:])) if edit.mark else ""

    def operation(ctx: _Context) -> Change | ToolResult:
        current = sha256(ctx.opened.raw) if ctx.opened.raw is not None else ABSENT
        if current == edit.hash_after:
            if not edit.existed_before:
                return Change(0, len(ctx.lines), [], delete_file=True, header_ok=True, bump=False)
            before = edit.text_before.split("\n")
            return Change(0, len(ctx.lines), before, bump=False, header_ok=True, mark="")
        if edit.mark and edit.fragment_after:
            hits = _locate(ctx.lines, list(edit.fragment_after))
            if len(hits) == 1:
                at = hits[0]
                return Change(
                    start=at,
                    end_old=at + len(edit.fragment_after),
                    new_lines=list(edit.fragment_before),
                    block=edit.block,
                    header_ok=edit.tool == "block_anfuegen",
                )
            return fail(
                Step.BLOCK_VERAENDERT,
                f"Der Abschnitt mit der Marke {shown} in {edit.path} wurde seit der "
                "Einarbeitung verändert; ich nehme ihn nicht blind zurück.",
            )
        return fail(
            Step.DATEI_VERAENDERT,
            f"{edit.path} wurde seit dieser Bearbeitung weiter verändert; ohne Marke nehme ich "
            "sie nicht zurück.",
        )

    result = run_edit(
        user=user,
        character=edit.character,
        path=edit.path,
        tool="rueckgaengig",
        cause=cause or EditCause(kind=KnowledgeEdit.Cause.RUECKNAHME),
        operation=operation,
        must_exist=edit.existed_before,
        undoes=edit,
    )
    if result.ok:
        result.message = (
            f"Ich habe {'die Einarbeitung ' + shown if shown else 'die Bearbeitung'} in "
            f"{edit.path} zurückgenommen. " + result.message
        ).strip()
    return result


def knowledge_mark_undo(
    *, user: User, character: Character, path: str, mark: str, cause: EditCause | None = None
) -> ToolResult:
    """Undo the incorporation carrying ``mark`` ("i3" or "[i3>]") in one of the pair's files."""
    target = schreibziel_pruefen(path, user=user, character=character)
    if not target.ok:
        return refused(target.step, target.reason)
    name = str(mark).strip().strip("[]<>").lstrip("<").rstrip(">")
    edit = (
        KnowledgeEdit.objects.filter(
            user=user, character=character, path=target.rel_path, mark=name
        )
        .exclude(outcome=KnowledgeEdit.Outcome.VERWORFEN)
        .first()
    )
    if edit is None:
        return fail(
            Step.KEINE_BEARBEITUNG, f"Die Marke {mark} kenne ich in {target.rel_path} nicht."
        )
    return knowledge_edit_undo(user=user, edit_id=edit.pk, cause=cause)
