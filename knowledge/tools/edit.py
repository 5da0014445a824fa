"""The surgical write tools (seed 004 §3a.1) and the one path every edit takes.

Every edit, in this order: the target check (``schreibziel_pruefen``); one writer per file
(``fileio.file_lock``) and the check again under the lock; open intents of the file settled;
the change computed on the lines; a check that only the targeted region changed (the version
line aside); the version bumped; the intent stored (``KnowledgeEdit``: hashes, diff, mark,
cause); the atomic replace; the file read back and checked again; the intent settled; the
library row made to follow the file and read back.

A full rewrite is "verlustbehaftet ohne Alarm" (seed 004 §3a.1): ``datei_schreiben`` creates
files and overwrites one only when asked to explicitly (``ueberschreiben=True``).
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from conversation.models import Character
from knowledge import conf, document, marks
from knowledge.fileio import (
    LockTimeout,
    atomic_write,
    file_lock,
    hook,
    make_dirs_below,
    read_bytes,
    remove,
    remove_stale_temps,
    sha256,
)
from knowledge.library import library_row_delete, library_row_refresh
from knowledge.models import KnowledgeEdit, KnowledgeEntry
from knowledge.structure import Block
from knowledge.tools.common import (
    BlockRef,
    Opened,
    check_text,
    find_block,
    load,
    missing,
    text_lines,
)
from knowledge.tools.result import Status, Step, ToolResult, fail, refused
from knowledge.zone import pair_dir, schreibziel_pruefen

logger = logging.getLogger(__name__)

ABSENT = ""  # hash_after of an edit that removes the file


@dataclass(frozen=True)
class EditCause:
    """Who caused an edit: the person, Nova as author, or the return path for a memory."""

    kind: str = KnowledgeEdit.Cause.PERSON
    memory_id: int | None = None
    turn_id: int | None = None


PERSON = EditCause()


@dataclass
class Change:
    """Replace ``old[start:end_old]`` by ``new_lines``. ``header_ok`` allows touching the
    header (metadata, whole-file writes); ``bump`` raises the version by one minor step."""

    start: int
    end_old: int
    new_lines: list[str]
    block: str = ""
    mark: str = ""
    bump: bool = True
    header_ok: bool = False
    delete_file: bool = False
    version: str = ""  # set by whole-file writes that bring their own version line


@dataclass
class _Context:
    opened: Opened
    lines: list[str]
    version: document.VersionLine | None
    next_mark: int
    header_end: int
    extra: dict[str, Any] = field(default_factory=dict)


Operation = Callable[[_Context], "Change | ToolResult"]


# --- the one path ---------------------------------------------------------------------------


def _diff(rel: str, old: list[str], new: list[str]) -> str:
    return "\n".join(
        difflib.unified_diff(old, new, fromfile=f"a/{rel}", tofile=f"b/{rel}", lineterm="")
    )


def only_region_changed(
    old: list[str], new: list[str], start: int, end_old: int, end_new: int, skip: set[int]
) -> bool:
    """Lines before ``start`` and from ``end_old`` on are unchanged (the lines whose old index
    is in ``skip`` — the version line — excepted)."""
    if len(old) - end_old != len(new) - end_new or start > min(len(old), len(new)):
        return False
    for i in range(start):
        if i not in skip and old[i] != new[i]:
            return False
    for offset in range(len(old) - end_old):
        i = end_old + offset
        if i not in skip and old[i] != new[end_new + offset]:
            return False
    return True


def _next_mark(user: User, character: Character, rel: str, text: str) -> int:
    used = marks.marks_in(text)
    for mark in (
        KnowledgeEdit.objects.filter(user=user, character=character, path=rel)
        .exclude(mark="")
        # An intent that never landed never showed its mark: the number is free again.
        .exclude(outcome=KnowledgeEdit.Outcome.VERWORFEN)
        .values_list("mark", flat=True)
    ):
        if re.fullmatch(r"i\d+", mark):
            used.add(int(mark[1:]))
    return max(used, default=0) + 1


def _cause_fields(cause: EditCause) -> dict[str, Any]:
    return {
        "cause": cause.kind,
        "memory_entry_id": cause.memory_id,
        "turn_id": cause.turn_id,
    }


def _current_hash(resolved: Path) -> str | None:
    """sha256 of the file, ABSENT when it is gone, None when unreadable."""
    try:
        raw = read_bytes(resolved)
    except OSError:
        return None
    return ABSENT if raw is None else sha256(raw)


def _mark_written(edit: KnowledgeEdit) -> None:
    now = timezone.now()
    KnowledgeEdit.objects.filter(pk=edit.pk).update(
        outcome=KnowledgeEdit.Outcome.GESCHRIEBEN, settled_at=now
    )
    if edit.undoes_id:
        KnowledgeEdit.objects.filter(pk=edit.undoes_id).update(
            outcome=KnowledgeEdit.Outcome.ZURUECKGENOMMEN, settled_at=now
        )


def _follow(
    user: User, character: Character, rel: str, resolved: Path, typ: str | None
) -> ToolResult:
    """Make the library row follow the file as it is on disk now."""
    opened = load(resolved, rel)
    if isinstance(opened, ToolResult):
        return opened
    if opened.text is None or opened.raw is None:
        library_row_delete(user=user, character=character, rel_path=rel)
        return ToolResult(status=Status.OK, path=rel)
    row = library_row_refresh(
        user=user,
        character=character,
        rel_path=rel,
        text=opened.text,
        content_hash=sha256(opened.raw),
        typ=typ,
    )
    if not row.ok:
        step = Step.EINBETTUNG if row.step == "einbettung" else Step.BIBLIOTHEK
        return fail(
            step,
            f"{rel} ist geschrieben, aber meine Bibliothek konnte der Datei nicht folgen "
            f"({row.message}); beim nächsten Schreiben versuche ich es wieder.",
            path=rel,
            entry_id=row.entry.pk if row.entry else None,
        )
    assert row.entry is not None
    return ToolResult(
        status=Status.OK,
        path=rel,
        version=row.entry.version,
        content_hash=row.entry.inhalt_hash,
        entry_id=row.entry.pk,
    )


def _settle_intents(user: User, character: Character, rel: str, resolved: Path) -> None:
    """Intents of a writer that died between storing the intent and settling it: the file's
    hash tells whether its bytes landed (geschrieben) or not (verworfen). Caller holds the lock."""
    remove_stale_temps(resolved)
    pending = list(
        KnowledgeEdit.objects.filter(
            user=user, character=character, path=rel, outcome=KnowledgeEdit.Outcome.VORBEREITET
        ).order_by("created_at", "id")
    )
    if not pending:
        return
    current = _current_hash(resolved)
    landed = False
    for edit in pending:
        if current is not None and current == edit.hash_after:
            _mark_written(edit)
            landed = True
            outcome = KnowledgeEdit.Outcome.GESCHRIEBEN
        else:
            outcome = KnowledgeEdit.Outcome.VERWORFEN
            KnowledgeEdit.objects.filter(pk=edit.pk).update(
                outcome=outcome, settled_at=timezone.now()
            )
        logger.info("knowledge: open intent %s of %s settled as %s", edit.pk, rel, outcome)
    if landed:
        _follow(user, character, rel, resolved, None)


def run_edit(
    *,
    user: User,
    character: Character,
    path: str,
    tool: str,
    cause: EditCause,
    operation: Operation,
    must_exist: bool = True,
    typ: str | None = None,
    undoes: KnowledgeEdit | None = None,
) -> ToolResult:
    """The one path of every edit (see the module docstring). Never raises for an expected
    failure; returns the typed result. Call it outside an open transaction in production:
    the intent row must be committed before the rename for a crash to be recoverable."""
    target = schreibziel_pruefen(path, user=user, character=character)
    if not target.ok or target.resolved is None:
        return refused(target.step, target.reason)
    resolved, rel = target.resolved, target.rel_path
    folder = pair_dir(user=user, character=character, create=True)
    try:
        rel_dir = resolved.relative_to(folder).parent
        if str(rel_dir) != ".":
            make_dirs_below(folder, rel_dir)
        with file_lock(resolved, key=f"{user.pk}-{character.pk}:{rel}"):
            again = schreibziel_pruefen(path, user=user, character=character)
            if not again.ok or again.resolved != resolved:
                return refused(
                    Step.ZIEL_GEAENDERT,
                    "Das Schreibziel hat sich während der Prüfung verändert; ich schreibe nicht.",
                )
            _settle_intents(user, character, rel, resolved)
            return _edit_locked(
                user=user,
                character=character,
                resolved=resolved,
                rel=rel,
                tool=tool,
                cause=cause,
                operation=operation,
                must_exist=must_exist,
                typ=typ,
                undoes=undoes,
            )
    except LockTimeout:
        return fail(
            Step.GESPERRT,
            f"{rel} wird gerade anderweitig bearbeitet; ich schreibe nicht gleichzeitig hinein.",
            path=rel,
        )
    except OSError as exc:
        logger.warning("knowledge write %s failed: %s", rel, exc)
        return fail(Step.SCHREIBEN, f"{rel} konnte ich nicht schreiben ({exc.strerror}).", path=rel)


def _edit_locked(
    *,
    user: User,
    character: Character,
    resolved: Path,
    rel: str,
    tool: str,
    cause: EditCause,
    operation: Operation,
    must_exist: bool,
    typ: str | None,
    undoes: KnowledgeEdit | None,
) -> ToolResult:
    opened = load(resolved, rel)
    if isinstance(opened, ToolResult):
        return opened
    if opened.text is None and must_exist:
        return missing(rel)
    lines = opened.lines
    version = document.find_version(lines)
    ctx = _Context(
        opened=opened,
        lines=lines,
        version=version,
        next_mark=_next_mark(user, character, rel, opened.text or ""),
        header_end=document.header_end(lines),
    )
    change = operation(ctx)
    if isinstance(change, ToolResult):
        change.path = change.path or rel
        return change
    if change.start < ctx.header_end and not change.header_ok:
        return fail(
            Step.KOPFBEREICH,
            "Den Kopf mit Titel und Version ändere ich nur über die Metadaten.",
            path=rel,
        )

    if change.delete_file:
        new_lines: list[str] = []
        new_bytes: bytes | None = None
        version_after = ""
    else:
        new_lines = lines[: change.start] + change.new_lines + lines[change.end_old :]
        version_after = change.version
        skip: set[int] = set()
        if change.bump:
            if version is None:
                return fail(
                    Step.KEINE_VERSION,
                    f"{rel} hat keine Zeile „Version: X.Y“ im Kopf; ohne sie schreibe ich "
                    "nicht hinein.",
                    path=rel,
                )
            found = document.find_version(new_lines)
            if found is None:
                return fail(Step.KEINE_VERSION, f"Die Änderung würde die Version aus {rel} "
                            "entfernen; ich schreibe nicht.", path=rel)  # fmt: skip
            version_after = version.bumped()
            new_lines = document.with_version(new_lines, found, version_after)
            skip = {version.index}
        elif not version_after:
            version_after = document.version_of("\n".join(new_lines))
        end_new = change.start + len(change.new_lines)
        if not only_region_changed(lines, new_lines, change.start, change.end_old, end_new, skip):
            return fail(
                Step.NICHT_NUR_DER_BLOCK,
                "Die Änderung hätte mehr als den gewählten Abschnitt berührt; ich schreibe nicht.",
                path=rel,
            )
        new_bytes = "\n".join(new_lines).encode("utf-8")
        if len(new_bytes) > conf.max_file_bytes():
            return fail(Step.ZU_GROSS, f"{rel} würde zu groß; ich schreibe nicht.", path=rel)

    hash_before = sha256(opened.raw) if opened.raw is not None else ABSENT
    hash_after = sha256(new_bytes) if new_bytes is not None else ABSENT
    entry = KnowledgeEntry.objects.filter(user=user, character=character, path=rel).first()
    edit = KnowledgeEdit.objects.create(
        user=user,
        character=character,
        entry=entry,
        path=rel,
        tool=tool,
        mark=change.mark,
        block=change.block[:500],
        hash_before=hash_before,
        hash_after=hash_after,
        version_before=version.text if version else "",
        version_after=version_after,
        diff=_diff(rel, lines, new_lines),
        fragment_before=lines[change.start : change.end_old],
        fragment_after=change.new_lines,
        text_before=opened.text or "",
        existed_before=opened.text is not None,
        undoes=undoes,
        outcome=KnowledgeEdit.Outcome.VORBEREITET,
        **_cause_fields(cause),
    )
    hook("vor_schreiben")
    try:
        if new_bytes is None:
            remove(resolved)
        else:
            atomic_write(resolved, new_bytes)
    except OSError as exc:
        KnowledgeEdit.objects.filter(pk=edit.pk).update(
            outcome=KnowledgeEdit.Outcome.VERWORFEN, settled_at=timezone.now()
        )
        return fail(Step.SCHREIBEN, f"{rel} konnte ich nicht schreiben ({exc.strerror}).", path=rel)

    # Read back: the bytes on disk must be the bytes meant, and only the region may differ.
    back = _current_hash(resolved)
    verified = back == hash_after
    if verified and new_bytes is not None:
        reread = load(resolved, rel)
        verified = (
            not isinstance(reread, ToolResult)
            and reread.text is not None
            and (
                change.header_ok
                or only_region_changed(
                    lines,
                    reread.lines,
                    change.start,
                    change.end_old,
                    change.start + len(change.new_lines),
                    {version.index} if (change.bump and version) else set(),
                )
            )
        )
    if not verified:
        # Nothing half-done stays: put the old bytes back and discard the intent.
        if opened.raw is not None:
            atomic_write(resolved, opened.raw)
        elif _current_hash(resolved) not in (ABSENT, None):
            remove(resolved)
        KnowledgeEdit.objects.filter(pk=edit.pk).update(
            outcome=KnowledgeEdit.Outcome.VERWORFEN, settled_at=timezone.now()
        )
        return fail(
            Step.NACHLESEN,
            f"{rel} sah beim Nachlesen nicht aus wie geschrieben; ich habe den alten Stand "
            "wiederhergestellt.",
            path=rel,
        )
    _mark_written(edit)
    followed = _follow(user, character, rel, resolved, typ)
    KnowledgeEdit.objects.filter(pk=edit.pk).update(entry_id=followed.entry_id)
    if not followed.ok:
        followed.edit_id = edit.pk
        followed.mark = change.mark
        followed.version = version_after
        return followed
    what = (
        f"{rel} ist jetzt Version {version_after}"
        if new_bytes is not None
        else f"{rel} ist entfernt"
    )
    if change.mark:
        what += f", die Änderung trägt die Marke {marks.open_mark(int(change.mark[1:]))}"
    return ToolResult(
        status=Status.OK,
        message=what + ".",
        path=rel,
        version=version_after,
        content_hash=hash_after,
        edit_id=edit.pk,
        mark=change.mark,
        entry_id=followed.entry_id,
        line_start=change.start + 1,
        line_end=change.start + len(change.new_lines),
    )


def settle_file(*, user: User, character: Character, path: str) -> ToolResult:
    """Settle open intents of one file under its lock and make its row follow the file."""
    target = schreibziel_pruefen(path, user=user, character=character)
    if not target.ok or target.resolved is None:
        return refused(target.step, target.reason)
    if not target.resolved.parent.exists():
        return missing(target.rel_path)
    try:
        with file_lock(target.resolved, key=f"{user.pk}-{character.pk}:{target.rel_path}"):
            _settle_intents(user, character, target.rel_path, target.resolved)
            return _follow(user, character, target.rel_path, target.resolved, None)
    except LockTimeout:
        return fail(Step.GESPERRT, f"{target.rel_path} wird gerade bearbeitet.")


# --- the tools ------------------------------------------------------------------------------


def _block_body(lines: list[str], block: Block) -> tuple[int, int]:
    """0-based [start, end) of a section's body: after its heading line, first non-blank line
    on; an empty body is the position right after the heading."""
    start = block.line_start if block.heading else block.line_start - 1
    end = block.line_end
    while start < end and not lines[start].strip():
        start += 1
    return start, max(start, end)


def datei_schreiben(
    *,
    user: User,
    character: Character,
    path: str,
    thema: str,
    inhalt: str,
    typ: str | None = None,
    ueberschreiben: bool = False,
    cause: EditCause = PERSON,
) -> ToolResult:
    """A new knowledge file from the template (``Version: 1.0``, ``## AKTUELL``). An existing
    file is overwritten only with ``ueberschreiben=True`` (then its version is bumped)."""
    for value, name in ((thema, "Titel"), (inhalt, "Inhalt")):
        bad = check_text(value, allow_empty=name == "Inhalt", field=name)
        if bad:
            return bad

    def operation(ctx: _Context) -> Change | ToolResult:
        if ctx.opened.text is not None and not ueberschreiben:
            return fail(
                Step.DATEI_EXISTIERT,
                f"{ctx.opened.rel_path} gibt es schon; ich ergänze sie gezielt, statt sie neu "
                "zu schreiben.",
            )
        version = document.FIRST_VERSION
        if ctx.opened.text is not None and ctx.version is not None:
            version = ctx.version.bumped()
        body = "\n".join(text_lines(inhalt))
        new = document.render_template(thema=thema, inhalt=body, version=version).split("\n")
        return Change(
            start=0,
            end_old=len(ctx.lines),
            new_lines=new,
            bump=False,
            header_ok=True,
            version=version,
        )

    return run_edit(
        user=user,
        character=character,
        path=path,
        tool="datei_ueberschreiben" if ueberschreiben else "datei_schreiben",
        cause=cause,
        operation=operation,
        must_exist=False,
        typ=typ,
    )


def block_ersetzen(
    *,
    user: User,
    character: Character,
    path: str,
    block: BlockRef,
    text: str,
    cause: EditCause = PERSON,
) -> ToolResult:
    """Replace the body of one section (its heading stays), marked ``[iN>] … [<iN]``."""
    bad = check_text(text)
    if bad:
        return bad

    def operation(ctx: _Context) -> Change | ToolResult:
        found = find_block(ctx.opened.text or "", block, ctx.opened.rel_path)
        if isinstance(found, ToolResult):
            return found
        start, end = _block_body(ctx.lines, found)
        wrapped = marks.wrap_lines(text_lines(text), ctx.next_mark)
        if start == end and found.heading:
            wrapped = ["", *wrapped]
        return Change(
            start=start,
            end_old=end,
            new_lines=wrapped,
            block=found.heading,
            mark=marks.mark_name(ctx.next_mark),
        )

    return run_edit(
        user=user, character=character, path=path, tool="block_ersetzen", cause=cause,
        operation=operation,
    )  # fmt: skip


def block_einfuegen(
    *,
    user: User,
    character: Character,
    path: str,
    text: str,
    nach: BlockRef | None = None,
    vor: BlockRef | None = None,
    cause: EditCause = PERSON,
) -> ToolResult:
    """Insert a new paragraph at a chosen place: right after block ``nach`` (between it and the
    next one) or right before block ``vor``. Exactly one of the two."""
    bad = check_text(text)
    if bad:
        return bad
    if (nach is None) == (vor is None):
        return fail(
            Step.ORT_UNKLAR,
            "Sag mir genau eine Stelle: nach welchem oder vor welchem Abschnitt.",
        )

    def operation(ctx: _Context) -> Change | ToolResult:
        ref = nach if nach is not None else vor
        assert ref is not None
        found = find_block(ctx.opened.text or "", ref, ctx.opened.rel_path)
        if isinstance(found, ToolResult):
            return found
        wrapped = marks.wrap_lines(text_lines(text), ctx.next_mark)
        if nach is not None:
            at = found.line_end
            new = ["", *wrapped]
        else:
            at = found.line_start - 1
            new = [*wrapped, ""]
            if at <= ctx.header_end:
                # Before the first section would put the paragraph into the header.
                return fail(
                    Step.KOPFBEREICH,
                    "Vor den ersten Abschnitt schreibe ich nichts; dort steht der Kopf.",
                )
        return Change(
            start=at,
            end_old=at,
            new_lines=new,
            block=found.heading,
            mark=marks.mark_name(ctx.next_mark),
        )

    return run_edit(
        user=user, character=character, path=path, tool="block_einfuegen", cause=cause,
        operation=operation,
    )  # fmt: skip


def block_anfuegen(
    *,
    user: User,
    character: Character,
    path: str,
    text: str,
    ueberschrift: str | None = None,
    cause: EditCause = PERSON,
) -> ToolResult:
    """Append a paragraph at the end of the file, optionally as a new ``##`` section."""
    bad = check_text(text)
    if bad:
        return bad
    heading = ""
    if ueberschrift is not None:
        bad = check_text(ueberschrift, field="Titel")
        if bad:
            return bad
        heading = " ".join(ueberschrift.split()).lstrip("#").strip()[:200]

    def operation(ctx: _Context) -> Change | ToolResult:
        at = len(ctx.lines)
        while at > 0 and not ctx.lines[at - 1].strip():
            at -= 1
        if ueberschrift is None and at < ctx.header_end:
            return fail(
                Step.ORT_UNKLAR,
                f"{ctx.opened.rel_path} hat noch keinen Abschnitt; gib mir eine Überschrift.",
            )
        head = ["", f"## {heading}"] if ueberschrift is not None else []
        return Change(
            start=at,
            end_old=at,
            new_lines=[*head, "", *marks.wrap_lines(text_lines(text), ctx.next_mark)],
            block=heading if ueberschrift is not None else "",
            mark=marks.mark_name(ctx.next_mark),
            # A pure insertion after the last line: the header's lines stay as they are.
            header_ok=True,
        )

    return run_edit(
        user=user, character=character, path=path, tool="block_anfuegen", cause=cause,
        operation=operation,
    )  # fmt: skip


def _occurrences(haystack: str, needle: str) -> list[int]:
    """Every start offset, overlapping ones included ("aa" twice in "aaa")."""
    found, at = [], haystack.find(needle)
    while at != -1:
        found.append(at)
        at = haystack.find(needle, at + 1)
    return found


def str_replace_in_block(
    *,
    user: User,
    character: Character,
    path: str,
    block: BlockRef,
    alt: str,
    neu: str,
    cause: EditCause = PERSON,
) -> ToolResult:
    """Replace ``alt`` by ``neu`` inside one section — only if ``alt`` occurs there exactly
    once. Zero or several matches fail loudly and leave the file byte-identical (seed 004
    §3a.1: a miss must show, not pass)."""
    bad = check_text(alt, field="gesuchte Text") or check_text(neu, allow_empty=True)
    if bad:
        return bad

    def operation(ctx: _Context) -> Change | ToolResult:
        found = find_block(ctx.opened.text or "", block, ctx.opened.rel_path)
        if isinstance(found, ToolResult):
            return found
        first, last = found.line_start - 1, found.line_end
        block_text = "\n".join(ctx.lines[first:last])
        hits = _occurrences(block_text, alt)
        if not hits:
            return fail(
                Step.TEXT_NICHT_GEFUNDEN,
                f"„{alt[:80]}“ steht nicht im Abschnitt „{found.heading}“; ich ändere nichts.",
            )
        if len(hits) > 1:
            return fail(
                Step.TEXT_MEHRDEUTIG,
                f"„{alt[:80]}“ steht {len(hits)}-mal im Abschnitt „{found.heading}“; ich rate "
                "keine Stelle und ändere nichts.",
            )
        at = hits[0]
        line_from = first + block_text.count("\n", 0, at)
        line_to = first + block_text.count("\n", 0, at + len(alt)) + 1
        region = "\n".join(ctx.lines[line_from:line_to])
        offset = at - sum(len(x) + 1 for x in ctx.lines[first:line_from])
        replaced = (
            region[:offset] + marks.wrap_inline(neu, ctx.next_mark) + region[offset + len(alt) :]
        )
        return Change(
            start=line_from,
            end_old=line_to,
            new_lines=replaced.split("\n"),
            block=found.heading,
            mark=marks.mark_name(ctx.next_mark),
        )

    return run_edit(
        user=user, character=character, path=path, tool="str_replace_in_block", cause=cause,
        operation=operation,
    )  # fmt: skip


ALLOWED_FIELDS = ("Thema", *document.HEADER_FIELDS)


def metadaten_aktualisieren(
    *,
    user: User,
    character: Character,
    path: str,
    felder: dict[str, Any],
    cause: EditCause = PERSON,
) -> ToolResult:
    """Set header fields: ``Thema`` (the title line), ``Zusammenfassung``, ``Stichwörter``,
    ``Typ``. The version is bumped; nothing below the header changes."""
    if not isinstance(felder, dict) or not felder:
        return fail(Step.UNBEKANNTES_FELD, "Welche Angabe soll ich ändern? Es fehlt ein Feld.")
    clean: dict[str, str] = {}
    for key, value in felder.items():
        if key not in ALLOWED_FIELDS:
            return fail(
                Step.UNBEKANNTES_FELD,
                f"Das Feld „{str(key)[:40]}“ kenne ich nicht; möglich sind "
                f"{', '.join(ALLOWED_FIELDS)}.",
            )
        bad = check_text(value, field=str(key))
        if bad:
            return bad
        clean[key] = " ".join(str(value).split())[:500]

    def operation(ctx: _Context) -> Change | ToolResult:
        if ctx.version is None:
            return fail(
                Step.KEINE_VERSION,
                f"{ctx.opened.rel_path} hat keine Zeile „Version: X.Y“ im Kopf.",
            )
        head = ctx.lines[: ctx.header_end]
        if "Thema" in clean:
            at = document.title_index(head)
            if at is None:
                return fail(Step.KEIN_BLOCK, f"{ctx.opened.rel_path} hat keine Titelzeile.")
            head[at] = f"# {clean['Thema']}"
        existing = document.header_fields(head)
        insert_at = ctx.version.index + 1
        for key in document.HEADER_FIELDS:
            if key not in clean:
                continue
            if key in existing:
                head[existing[key][0]] = f"{key}: {clean[key]}"
            else:
                head.insert(insert_at, f"{key}: {clean[key]}")
                insert_at += 1
        return Change(start=0, end_old=ctx.header_end, new_lines=head, block="Kopf", header_ok=True)

    return run_edit(
        user=user, character=character, path=path, tool="metadaten_aktualisieren",
        cause=cause, operation=operation,
    )  # fmt: skip


def edits_of_memory(*, memory_id: int) -> list[KnowledgeEdit]:
    """Edits caused by one memory that are written or still open (for the return path)."""
    return list(
        KnowledgeEdit.objects.filter(memory_entry_id=memory_id)
        .filter(
            Q(outcome=KnowledgeEdit.Outcome.GESCHRIEBEN)
            | Q(outcome=KnowledgeEdit.Outcome.VORBEREITET)
        )
        .order_by("id")
    )
