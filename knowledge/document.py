"""The shape of a knowledge file: the template, the version line, the header fields.

A new file (seed 004 v0.10, "die Schreibvorlage … legt jede neue Wissensdatei mit ``## AKTUELL``
und Version an")::

    # <Thema>

    Version: 1.0

    ## AKTUELL

    <Inhalt>

The header is everything before the first heading of level 2 or deeper; it holds the version
line and optional ``Schlüssel: Wert`` fields (``Zusammenfassung``, ``Stichwörter``, ``Typ``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FIRST_VERSION = "1.0"
CURRENT_HEADING = "AKTUELL"
HEADER_FIELDS = ("Zusammenfassung", "Stichwörter", "Typ")
_VERSION = re.compile(r"^Version:\s*(\d+)\.(\d+)\s*$")
_SUBHEADING = re.compile(r"^\s{0,3}#{2,6}\s")
_TITLE = re.compile(r"^\s{0,3}#\s+(.+?)\s*#*\s*$")
_FIELD = re.compile(r"^([A-Za-zÄÖÜäöüß]+):\s*(.*)$")


@dataclass(frozen=True)
class VersionLine:
    index: int  # 0-based line index
    major: int
    minor: int

    @property
    def text(self) -> str:
        return f"{self.major}.{self.minor}"

    def bumped(self) -> str:
        return f"{self.major}.{self.minor + 1}"


def render_template(*, thema: str, inhalt: str, version: str = FIRST_VERSION) -> str:
    title = " ".join(thema.split()) or "Ohne Titel"
    body = inhalt.strip("\n")
    parts = [f"# {title}", "", f"Version: {version}", "", f"## {CURRENT_HEADING}", ""]
    if body:
        parts.append(body)
    return "\n".join(parts) + "\n"


def header_end(lines: list[str]) -> int:
    """Index of the first line of level-2+ heading (the end of the header, exclusive)."""
    for i, line in enumerate(lines):
        if _SUBHEADING.match(line):
            return i
    return len(lines)


def find_version(lines: list[str]) -> VersionLine | None:
    for i in range(header_end(lines)):
        match = _VERSION.match(lines[i])
        if match:
            return VersionLine(i, int(match.group(1)), int(match.group(2)))
    return None


def version_of(text: str) -> str:
    found = find_version(text.split("\n"))
    return found.text if found else ""


def with_version(lines: list[str], version: VersionLine, new: str) -> list[str]:
    out = list(lines)
    out[version.index] = f"Version: {new}"
    return out


def title_index(lines: list[str]) -> int | None:
    for i in range(header_end(lines)):
        if _TITLE.match(lines[i]):
            return i
    return None


def header_fields(lines: list[str]) -> dict[str, tuple[int, str]]:
    """{field: (line index, value)} for the known header fields."""
    found: dict[str, tuple[int, str]] = {}
    for i in range(header_end(lines)):
        match = _FIELD.match(lines[i])
        if match and match.group(1) in HEADER_FIELDS and match.group(1) not in found:
            found[match.group(1)] = (i, match.group(2).strip())
    return found
