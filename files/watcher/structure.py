"""The block map of a file (``struktur_analysieren``, seed 004 v0.12): headings and their
sections with line ranges, code blocks and tables. Lines are 1-based and inclusive, so a
citation ``path:12-20`` names exactly what a reader sees in an editor.
"""

from __future__ import annotations

import re
from typing import Any

_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")
_CODE_DEF = re.compile(
    r"^(?:async\s+def|def|class|function|func|fn|pub\s+fn|interface|struct|impl)\s+(\w+)"
)


def _block(kind: str, heading: str, level: int, start: int, end: int) -> dict[str, Any]:
    return {"kind": kind, "heading": heading, "level": level, "line_start": start, "line_end": end}


def _close_sections(
    lines: list[str], heads: list[tuple[int, int, str]], first_content: int | None
) -> list[dict[str, Any]]:
    """Sections run from a heading to the line before the next heading (any level)."""
    n = len(lines)
    blocks: list[dict[str, Any]] = []
    if first_content is not None and (not heads or first_content < heads[0][0]):
        end = (heads[0][0] - 1) if heads else n
        while end > first_content and not lines[end - 1].strip():
            end -= 1
        blocks.append(_block("section", "", 0, first_content, end))
    for i, (line_no, level, title) in enumerate(heads):
        end = heads[i + 1][0] - 1 if i + 1 < len(heads) else n
        while end > line_no and not lines[end - 1].strip():
            end -= 1
        blocks.append(_block("section", title, level, line_no, end))
    return blocks


def _markdown(lines: list[str]) -> list[dict[str, Any]]:
    heads: list[tuple[int, int, str]] = []
    extra: list[dict[str, Any]] = []
    fence_start: int | None = None
    table_start: int | None = None
    first_content: int | None = None
    for i, line in enumerate(lines, start=1):
        if fence_start is not None:
            if _FENCE.match(line):
                extra.append(_block("code", "", 0, fence_start, i))
                fence_start = None
            continue
        if _FENCE.match(line):
            fence_start = i
            first_content = first_content or i
            continue
        is_table = line.lstrip().startswith("|")
        if is_table and table_start is None:
            table_start = i
        if not is_table and table_start is not None:
            extra.append(_block("table", "", 0, table_start, i - 1))
            table_start = None
        match = _MD_HEADING.match(line)
        if match:
            heads.append((i, len(match.group(1)), match.group(2).strip()))
        elif line.strip() and first_content is None:
            first_content = i
    if fence_start is not None:  # an unclosed fence runs to the end, as editors show it
        extra.append(_block("code", "", 0, fence_start, len(lines)))
    if table_start is not None:
        extra.append(_block("table", "", 0, table_start, len(lines)))
    return _close_sections(lines, heads, first_content) + extra


def _rst(lines: list[str]) -> list[dict[str, Any]]:
    heads: list[tuple[int, int, str]] = []
    extra: list[dict[str, Any]] = []
    levels: list[str] = []
    first_content: int | None = None
    code_start: int | None = None
    table_start: int | None = None
    for i, line in enumerate(lines, start=1):
        nxt = lines[i] if i < len(lines) else ""
        if code_start is not None:
            if line.strip() and not line[:1].isspace():
                extra.append(_block("code", "", 0, code_start, i - 1))
                code_start = None
            else:
                continue
        stripped = line.strip()
        is_table = stripped.startswith("+-") or stripped.startswith("+=")
        if is_table and table_start is None:
            table_start = i
        if table_start is not None and not (is_table or stripped.startswith("|")):
            extra.append(_block("table", "", 0, table_start, i - 1))
            table_start = None
        under = _RST_UNDERLINE.match(nxt)
        if (
            stripped
            and not _RST_UNDERLINE.match(line)
            and under
            and len(nxt.strip()) >= len(stripped)
        ):
            char = under.group(1)
            if char not in levels:
                levels.append(char)
            heads.append((i, levels.index(char) + 1, stripped))
            continue
        if stripped and first_content is None and not _RST_UNDERLINE.match(line):
            first_content = i
        if stripped.endswith("::") or stripped.startswith(".. code"):
            code_start = i + 1
    if code_start is not None and code_start <= len(lines):
        extra.append(_block("code", "", 0, code_start, len(lines)))
    if table_start is not None:
        extra.append(_block("table", "", 0, table_start, len(lines)))
    return _close_sections(lines, heads, first_content) + extra


def _code(lines: list[str]) -> list[dict[str, Any]]:
    heads = [
        (i, 1, m.group(0).strip())
        for i, line in enumerate(lines, start=1)
        if (m := _CODE_DEF.match(line))
    ]
    first = next((i for i, line in enumerate(lines, start=1) if line.strip()), None)
    blocks = _close_sections(lines, heads, first)
    for block in blocks:
        block["kind"] = "code"
    return blocks


def struktur_analysieren(text: str, fmt: str) -> list[dict[str, Any]]:
    """Block map of ``text``: [{kind: section|code|table, heading, level, line_start,
    line_end}], sections first in file order, then code blocks and tables."""
    lines = text.splitlines()
    if not lines:
        return []
    if fmt == "rst":
        return _rst(lines)
    if fmt == "code":
        return _code(lines)
    return _markdown(lines)
