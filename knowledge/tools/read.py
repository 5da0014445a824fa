"""Read tools of the knowledge zone: the whole file, the block map, a block, lines, grep.

Reads obey the same zone rules as writes (``schreibziel_pruefen``): only the pair's folder,
nothing hidden, Markdown only, never a released root. Bounded like the file service's reads:
at most ``KNOWLEDGE_READ_MAX_LINES`` lines per read, grep stops at
``KNOWLEDGE_GREP_MAX_LINES`` hits; a cut is reported (``cut``) and said in the German text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from conversation.models import Character
from knowledge import conf, document
from knowledge.fileio import sha256
from knowledge.structure import block_map
from knowledge.tools.common import BlockRef, Opened, find_block, load, missing, read_target
from knowledge.tools.result import Status, Step, ToolResult, fail
from knowledge.zone import pair_dir, schreibziel_pruefen

MAX_GREP_PATTERN = 200


def _opened(user: User, character: Character, path: str) -> Opened | ToolResult:
    opened = read_target(user=user, character=character, path=path)
    if isinstance(opened, ToolResult):
        return opened
    if opened.text is None:
        return missing(opened.rel_path)
    return opened


def _ok(opened: Opened, **kw: Any) -> ToolResult:
    assert opened.text is not None and opened.raw is not None
    return ToolResult(
        status=Status.OK,
        path=opened.rel_path,
        version=document.version_of(opened.text),
        content_hash=sha256(opened.raw),
        **kw,
    )


def datei_lesen(*, user: User, character: Character, path: str) -> ToolResult:
    """The whole file (bounded by the file size limit, not by lines)."""
    opened = _opened(user, character, path)
    if isinstance(opened, ToolResult):
        return opened
    n = len(opened.text.splitlines()) if opened.text else 0
    return _ok(opened, text=opened.text or "", line_start=1 if n else 0, line_end=n)


def struktur_analysieren(*, user: User, character: Character, path: str) -> ToolResult:
    """The block map: sections (numbered 1..n), code blocks and tables with their lines."""
    opened = _opened(user, character, path)
    if isinstance(opened, ToolResult):
        return opened
    return _ok(opened, blocks=[b.as_json() for b in block_map(opened.text or "")])


def _lines_result(opened: Opened, start: int, end: int) -> ToolResult:
    lines = (opened.text or "").splitlines()
    limit = conf.read_max_lines()
    cut = end - start + 1 > limit
    if cut:
        end = start + limit - 1
    text = "\n".join(lines[start - 1 : end])
    result = _ok(opened, text=text, line_start=start, line_end=end, cut=cut)
    if cut:
        result.message = f"Ich zeige nur die Zeilen {start} bis {end} (höchstens {limit})."
    return result


def block_lesen(*, user: User, character: Character, path: str, block: BlockRef) -> ToolResult:
    opened = _opened(user, character, path)
    if isinstance(opened, ToolResult):
        return opened
    found = find_block(opened.text or "", block, opened.rel_path)
    if isinstance(found, ToolResult):
        return found
    result = _lines_result(opened, found.line_start, found.line_end)
    result.blocks = [found.as_json()]
    return result


def zeilen_lesen(
    *, user: User, character: Character, path: str, start: Any, end: Any
) -> ToolResult:
    opened = _opened(user, character, path)
    if isinstance(opened, ToolResult):
        return opened
    total = len((opened.text or "").splitlines())
    if (
        isinstance(start, bool)
        or isinstance(end, bool)
        or not isinstance(start, int)
        or not isinstance(end, int)
        or start < 1
        or end < start
        or start > total
    ):
        return fail(
            Step.ZEILEN_UNGUELTIG,
            f"Die Zeilen {start}–{end} gibt es in {opened.rel_path} nicht "
            f"(die Datei hat {'eine Zeile' if total == 1 else f'{total} Zeilen'}).",
            path=opened.rel_path,
        )
    return _lines_result(opened, start, min(end, total))


def _zone_files(folder: Path) -> list[str]:
    """Markdown files of the pair's folder, hidden entries and links skipped."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or not name.endswith(".md"):
                continue
            full = Path(dirpath) / name
            if not full.is_symlink():
                found.append(full.relative_to(folder).as_posix())
    return found


def datei_grep(
    *, user: User, character: Character, muster: Any, path: str | None = None
) -> ToolResult:
    """Lines containing ``muster`` (plain text, case-insensitive; no regular expressions, so
    no pattern can run away) in one file or in all of the pair's knowledge files."""
    if not isinstance(muster, str) or not muster.strip() or "\x00" in muster:
        return fail(Step.LEERER_TEXT, "Wonach soll ich suchen? Der Suchtext ist leer.")
    needle = muster.strip()[:MAX_GREP_PATTERN].casefold()
    if path is not None:
        targets = [path]
    else:
        targets = _zone_files(pair_dir(user=user, character=character))
    limit = conf.grep_max_lines()
    matches: list[dict[str, Any]] = []
    cut = False
    for rel in targets:
        target = schreibziel_pruefen(rel, user=user, character=character)
        if not target.ok or target.resolved is None:
            if path is not None:
                return ToolResult(status=Status.ABGELEHNT, step=target.step, message=target.reason)
            continue
        opened = load(target.resolved, target.rel_path)
        if isinstance(opened, ToolResult):
            if path is not None:
                return opened
            continue
        if opened.text is None:
            if path is not None:
                return missing(opened.rel_path)
            continue
        for number, line in enumerate(opened.text.splitlines(), start=1):
            if needle in line.casefold():
                if len(matches) >= limit:
                    cut = True
                    break
                matches.append({"path": opened.rel_path, "line": number, "text": line})
        if cut:
            break
    found = "Eine Fundstelle" if len(matches) == 1 else f"{len(matches)} Fundstellen"
    message = f"{found} für „{muster.strip()[:80]}“."
    if cut:
        message += f" Ich habe nach {limit} Treffern aufgehört."
    return ToolResult(status=Status.OK, path=path or "", matches=matches, cut=cut, message=message)
