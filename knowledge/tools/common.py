"""Shared parts of the read and edit tools: opening a target, finding a block, checking text."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from conversation.models import Character
from knowledge import conf, marks
from knowledge.fileio import TooLarge, read_bytes
from knowledge.structure import Block, block_map, sections
from knowledge.tools.result import Step, ToolResult, fail, refused
from knowledge.zone import schreibziel_pruefen

BlockRef = str | int


@dataclass
class Opened:
    resolved: Path
    rel_path: str
    raw: bytes | None  # None: the file does not exist (yet)
    text: str | None

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n") if self.text is not None else []


def read_target(*, user: User, character: Character, path: str) -> Opened | ToolResult:
    """Check ``path`` with the zone rules and read it (None when missing)."""
    target = schreibziel_pruefen(path, user=user, character=character)
    if not target.ok or target.resolved is None:
        return refused(target.step, target.reason)
    return load(target.resolved, target.rel_path)


def load(resolved: Path, rel_path: str) -> Opened | ToolResult:
    try:
        raw = read_bytes(resolved)
    except TooLarge:
        return fail(
            Step.ZU_GROSS,
            f"{rel_path} ist größer als {conf.max_file_bytes()} Bytes; das lese ich nicht.",
            path=rel_path,
        )
    except OSError:
        # A link in place of the file (O_NOFOLLOW), a folder, missing rights.
        return fail(Step.NICHT_LESBAR, f"{rel_path} kann ich nicht lesen.", path=rel_path)
    if raw is None:
        return Opened(resolved, rel_path, None, None)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return fail(Step.NICHT_LESBAR, f"{rel_path} ist kein lesbarer UTF-8-Text.", path=rel_path)
    return Opened(resolved, rel_path, raw, text)


def missing(rel_path: str) -> ToolResult:
    return fail(Step.DATEI_FEHLT, f"Die Wissensdatei {rel_path} gibt es nicht.", path=rel_path)


def find_block(text: str, ref: BlockRef, rel_path: str) -> Block | ToolResult:
    """A section by its 1-based ordinal or by its heading (case-insensitive, ``#`` optional).
    A heading that names two sections is refused, never guessed."""
    found = sections(block_map(text))
    if isinstance(ref, bool):
        ref = str(ref)
    if isinstance(ref, int):
        if 1 <= ref <= len(found):
            return found[ref - 1]
        return fail(
            Step.KEIN_BLOCK,
            f"{rel_path} hat keinen Abschnitt Nummer {ref} (es gibt {len(found)}).",
            path=rel_path,
        )
    wanted = str(ref).strip().lstrip("#").strip().casefold()
    hits = [b for b in found if b.heading.strip().casefold() == wanted]
    if not wanted or not hits:
        return fail(
            Step.KEIN_BLOCK,
            f"In {rel_path} gibt es keinen Abschnitt „{str(ref)[:80]}“.",
            path=rel_path,
        )
    if len(hits) > 1:
        return fail(
            Step.BLOCK_MEHRDEUTIG,
            f"In {rel_path} heißen {len(hits)} Abschnitte „{hits[0].heading}“; "
            "nenne mir die Nummer des Abschnitts.",
            path=rel_path,
        )
    return hits[0]


def check_text(text: Any, *, allow_empty: bool = False, field: str = "Text") -> ToolResult | None:
    """Content is data: it must be a string, not too long, and must not bring marks along."""
    if not isinstance(text, str) or "\x00" in text:
        return fail(Step.LEERER_TEXT, f"Der {field} ist kein lesbarer Text.")
    if not allow_empty and not text.strip():
        return fail(Step.LEERER_TEXT, f"Der {field} ist leer; ich schreibe nichts.")
    if len(text) > conf.max_text_chars():
        return fail(
            Step.TEXT_ZU_LANG,
            f"Der {field} ist länger als {conf.max_text_chars()} Zeichen; ich schreibe ihn nicht.",
        )
    if marks.has_mark_syntax(text):
        return fail(
            Step.MARKENFORM,
            f"Der {field} enthält eine Markenform wie [i1>]; die ist meinen Einarbeitungen "
            "vorbehalten, deshalb schreibe ich ihn nicht.",
        )
    return None


def text_lines(text: str) -> list[str]:
    """Lines of incoming text: trailing spaces and surrounding blank lines dropped."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines
