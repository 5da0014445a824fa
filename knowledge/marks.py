"""The reversible mark around each incorporation: ``[iN>]`` opens it, ``[<iN]`` closes it.

The seed shows the opening form (seed 004 §4b); the closing form mirrors it so the pair reads
as brackets in the text. N is unique per file (never reused, also after an undo), so the
marked fragment occurs exactly once and an undo finds it without guessing.
"""

from __future__ import annotations

import re

MARK_RE = re.compile(r"\[i(\d+)>\]|\[<i(\d+)\]")
# Lines a mark must not be glued to: it would break the heading, fence or table they open.
_STRUCTURAL = re.compile(r"^\s{0,3}(#{1,6}\s|```|~~~|\|)")


def mark_name(n: int) -> str:
    return f"i{n}"


def open_mark(n: int) -> str:
    return f"[i{n}>]"


def close_mark(n: int) -> str:
    return f"[<i{n}]"


def marks_in(text: str) -> set[int]:
    found: set[int] = set()
    for m in MARK_RE.finditer(text):
        found.add(int(m.group(1) or m.group(2)))
    return found


def has_mark_syntax(text: str) -> bool:
    """Content must not bring its own marks: an undo could then cut the wrong fragment."""
    return MARK_RE.search(text) is not None


def strip_marks(text: str) -> str:
    """The text without marks, for readers that should not see the bookkeeping."""
    text = re.sub(r"\[i\d+>\] ?", "", text)
    return re.sub(r" ?\[<i\d+\]", "", text)


def wrap_lines(lines: list[str], n: int) -> list[str]:
    """Put the marks around ``lines``: glued to the first and last line where that is plain
    text, on a line of their own where the line is a heading, a fence or a table row."""
    if not lines:
        return [f"{open_mark(n)} {close_mark(n)}"]
    out = list(lines)
    if _STRUCTURAL.match(out[0]):
        out.insert(0, open_mark(n))
    else:
        out[0] = f"{open_mark(n)} {out[0]}"
    if _STRUCTURAL.match(out[-1]) or out[-1] == open_mark(n):
        out.append(close_mark(n))
    else:
        out[-1] = f"{out[-1]} {close_mark(n)}"
    return out


def wrap_inline(text: str, n: int) -> str:
    return f"{open_mark(n)}{text}{close_mark(n)}"
