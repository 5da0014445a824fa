"""Read tools over released files: strictly read-only, always inside the pair's ACTIVE roots.

Every read resolves the path (symlinks, ``..``) and checks that the result lies inside one of
the pair's active roots; hidden files are not entered (DESIGN.md "Files"). Before that, each
root itself is checked again against the person's boundary (``root_path_still_valid``): a root
swapped for a link is not followed (``pfad_geaendert``), and the reason is kept on the root.
The resolved string only names the file: the bytes are read through ``boundary.root_open``
(the root's directory descriptor, checked against the device and inode stored at release)
and ``fsaccess`` (each component relative to it with ``O_NOFOLLOW``), so a folder swapped
between the check and the read makes the read fail, never lead out (issue 27).

What a read returns is the *parsed* text, through the same parser the watcher indexed the file
with (``files.watcher.parsers``): for PDF, DOCX and HTML too, the lines a citation names are
the lines a read shows. Files are opened with
``O_RDONLY | O_NOFOLLOW`` only — nothing here can open a file for writing. A file whose content
hash differs from the index says so in the result (the read re-checks the hash every time).

Bounds (Open WebUI / Letta use the same kind of caps): at most FILES_READ_MAX_LINES lines and
FILES_READ_MAX_CHARS characters per read (one long line is cut inside the line), grep stops
at FILES_GREP_MAX_LINES matching lines or FILES_GREP_TIME_LIMIT_S (each shown up to
GREP_LINE_CHARS), queries are capped at FILES_QUERY_MAX_CHARS; every cut is reported (``cut``)
and said in the German text ("gekürzt").
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User

from conversation.models import Character
from files import fsaccess
from files.boundary import RootPathCheck, path_text_problem, root_open, root_path_still_valid
from files.models import FileRoot, IndexEntry
from files.watcher.parsers import ParseError, Parser, TextParser, parser_for_format, parser_for_name

# Text formats are read up to this size and cut (said in the result); container formats (PDF,
# DOCX) cannot be parsed from a cut, so they are read whole up to FILES_MAX_BYTES or refused.
MAX_FILE_BYTES = 5 * 1024 * 1024
# Parsed lines by (content hash, format): a PDF is parsed once, not at every turn that cites it.
PARSED_CACHE_SIZE = 16
# A grep match shows this many characters of its line (FILES_GREP_MAX_LINES of them stay well
# under FILES_READ_MAX_CHARS).
GREP_LINE_CHARS = 300
_parsed_cache: OrderedDict[tuple[str, str], list[str]] = OrderedDict()
_parsed_lock = threading.Lock()


@dataclass
class ReadResult:
    status: str  # "ok" | "fehler"
    step: str = ""  # named failure: ausserhalb, wurzel_unbekannt, nicht_lesbar, ...
    message: str = ""  # German sentence for the person
    root_id: int | None = None
    path: str = ""  # relative to the root
    line_start: int = 0
    line_end: int = 0
    text: str = ""
    cut: bool = False
    changed: bool = False  # content hash differs from the indexed one
    indexed: bool = True
    current_hash: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def citation(self) -> str:
        return f"{self.path}:{self.line_start}-{self.line_end}"


def _refuse(step: str, message: str, *, path: str = "", root_id: int | None = None) -> ReadResult:
    return ReadResult(status="fehler", step=step, message=message, path=path, root_id=root_id)


@dataclass(frozen=True)
class Located:
    root: FileRoot
    user: User
    rel_path: str


def pair_roots(*, user: User, character: Character) -> list[FileRoot]:
    return list(
        FileRoot.objects.filter(user=user, character=character, state=FileRoot.State.ACTIVE)
    )


def locate(
    *, user: User, character: Character, path: str, root_id: int | None = None
) -> Located | ReadResult:
    """Resolve ``path`` (relative to a root, or absolute) inside one of the pair's active roots.

    Returns a refusal (``ReadResult`` with status fehler) when the root is not the pair's, is
    suspended, no longer passes the boundary (``pfad_geaendert`` and the boundary's steps), or
    the resolved path leaves it. Never raises for what a person can type: over-long names,
    symlink loops and undecodable text are named refusals.
    """
    if not path or len(path) > 1000:
        return _refuse("pfad_unlesbar", "Diesen Pfad kann ich nicht lesen.", path=path[:200])
    problem = path_text_problem(path)
    if problem is not None:
        step = "pfad_unlesbar" if problem.step == "kein_pfad" else problem.step
        message = "Diesen Pfad kann ich nicht lesen." if step == "pfad_unlesbar" else problem.reason
        return _refuse(step, message, path=path[:200])
    roots = pair_roots(user=user, character=character)
    if root_id is not None:
        roots = [r for r in roots if r.id == root_id]
        if not roots:
            # Another pair's root, a suspended one and a missing one read the same.
            return _refuse(
                "wurzel_unbekannt",
                "Diesen freigegebenen Ordner kenne ich nicht (oder er ist stillgelegt).",
                path=path,
                root_id=root_id,
            )
    found: list[Located] = []
    fenced: ReadResult | None = None
    for root in roots:
        fence = root_path_still_valid(root, user=user)
        if fence.refused:
            # DESIGN.md "Files": checked again at every read; the root says why.
            if root.last_error != fence.reason:
                FileRoot.objects.filter(pk=root.pk).update(last_error=fence.reason)
            fenced = fenced or _refuse(fence.outcome, fence.reason, path=path, root_id=root.id)
            continue
        base = Path(root.path)
        try:
            # realpath follows symlinks and "..", then we check; it does not raise for loops.
            candidate = Path(os.path.realpath(base / path))
        except (OSError, ValueError):
            return _refuse("pfad_unlesbar", "Diesen Pfad kann ich nicht lesen.", path=path[:200])
        if not candidate.is_relative_to(base):
            continue
        rel = candidate.relative_to(base).as_posix()
        if rel == "." or any(part.startswith(".") for part in rel.split("/")):
            return _refuse(
                "verborgen", "Verborgene Dateien lese ich nicht.", path=path, root_id=root.id
            )
        found.append(Located(root=root, user=user, rel_path=rel))
    if len(found) > 1:
        # Without a root id, a relative path may fit several roots: prefer one that has it.
        return next((f for f in found if _is_file(f)), found[0])
    if found:
        return found[0]
    if fenced is not None:
        return fenced
    return _refuse(
        "ausserhalb",
        "Dieser Pfad liegt außerhalb der freigegebenen Verzeichnisse; den lese ich nicht.",
        path=path,
        root_id=root_id,
    )


def _is_file(located: Located) -> bool:
    """Whether the root holds a regular file there, looked up through the root's descriptor."""
    opened = root_open(located.root, user=located.user)
    if isinstance(opened, RootPathCheck):
        return False
    with opened:
        try:
            st = fsaccess.lstat_at(opened.fd, located.rel_path)
        except (OSError, ValueError):  # ENAMETOOLONG, a link on the way, a hidden name
            return False
    return stat.S_ISREG(st.st_mode)


def _read_bytes(located: Located, limit: int) -> bytes | RootPathCheck:
    """The file's bytes (up to ``limit + 1``) through the root's checked descriptor, each
    component opened with O_NOFOLLOW; or the root's refusal when it is not the released one."""
    opened = root_open(located.root, user=located.user)
    if isinstance(opened, RootPathCheck):
        return opened
    with opened:
        return fsaccess.read_at(opened.fd, located.rel_path, limit)


def _parser_for(located: Located, entry: IndexEntry | None) -> Parser:
    """The parser the watcher used: by the format stored at indexing, else by the name; a file
    without a parser is read as plain text (binary content is refused)."""
    by_format = parser_for_format(entry.format) if entry is not None and entry.format else None
    return by_format or parser_for_name(located.rel_path) or TextParser()


def _parsed_lines(parser: Parser, digest: str, raw: bytes) -> list[str]:
    key = (digest, parser.format)
    with _parsed_lock:
        cached = _parsed_cache.get(key)
        if cached is not None:
            _parsed_cache.move_to_end(key)
            return cached
    lines = parser.parse(raw).text.splitlines()  # raises ParseError
    with _parsed_lock:
        _parsed_cache[key] = lines
        while len(_parsed_cache) > PARSED_CACHE_SIZE:
            _parsed_cache.popitem(last=False)
    return lines


def _load(
    located: Located,
) -> tuple[list[str], ReadResult]:
    """Parsed lines of the file plus a base result carrying changed/indexed flags."""
    base = ReadResult(status="ok", root_id=located.root.id, path=located.rel_path)

    def refuse(step: str, message: str) -> tuple[list[str], ReadResult]:
        return [], _refuse(step, message, path=located.rel_path, root_id=located.root.id)

    entry = (
        IndexEntry.objects.filter(root=located.root, rel_path=located.rel_path)
        .only("inhalt_hash", "format")
        .first()
    )
    parser = _parser_for(located, entry)
    limit = MAX_FILE_BYTES if parser.text_based else int(settings.FILES_MAX_BYTES)
    try:
        read = _read_bytes(located, limit)
    except FileNotFoundError:
        return refuse("fort", "Diese Datei gibt es nicht (mehr).")
    except IsADirectoryError:
        return refuse("keine_datei", "Das ist ein Ordner, keine Datei.")
    except fsaccess.NotAFile:
        return refuse(
            "keine_datei", "Das ist keine gewöhnliche Datei (etwa eine Pipe); die lese ich nicht."
        )
    except fsaccess.HiddenName:
        return refuse("verborgen", "Verborgene Dateien lese ich nicht.")
    except fsaccess.BadComponent:
        return refuse(
            "ausserhalb",
            "Dieser Pfad liegt außerhalb der freigegebenen Verzeichnisse; den lese ich nicht.",
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return refuse(
                "link_schleife",
                "Dieser Pfad ist eine Verknüpfung (oder eine Verknüpfungsschleife); "
                "Verknüpfungen folge ich beim Lesen nicht.",
            )
        if exc.errno == errno.ENAMETOOLONG:
            return refuse("name_zu_lang", "Dieser Pfad ist zu lang für das Dateisystem.")
        return refuse(
            "nicht_lesbar",
            f"Die Datei lässt sich nicht lesen ({exc.strerror or type(exc).__name__}).",
        )
    if isinstance(read, RootPathCheck):
        if read.refused:
            if located.root.last_error != read.reason:
                FileRoot.objects.filter(pk=located.root.pk).update(last_error=read.reason)
            return refuse(read.outcome, read.reason)
        return refuse("fort", "Diese Datei gibt es nicht (mehr).")
    raw = read
    if len(raw) > limit:
        if not parser.text_based:
            return refuse(
                "zu_gross",
                f"Die Datei ist größer als {limit // (1024 * 1024)} MB; "
                "ganz lesen kann ich sie nicht.",
            )
        base.cut = True
        raw = raw[:limit]
    base.current_hash = hashlib.sha256(raw).hexdigest()
    if entry is None:
        base.indexed = False
    elif entry.inhalt_hash and entry.inhalt_hash != base.current_hash and not base.cut:
        base.changed = True
    try:
        lines = _parsed_lines(parser, base.current_hash, raw)
    except ParseError as exc:
        if exc.step == "binaer":
            return refuse("binaer", "Die Datei enthält Binärdaten; als Text lese ich sie nicht.")
        return refuse(exc.step, f"Die Datei lässt sich nicht als Text lesen ({exc.message}).")
    return lines, base


def changed_note(result: ReadResult) -> str:
    if result.changed:
        return (
            "Achtung: Die Datei hat sich seit dem Indexieren geändert (Prüfsumme neu "
            "berechnet); Zeilenangaben aus dem Index können verschoben sein."
        )
    if not result.indexed:
        return "Diese Datei ist noch nicht im Index."
    return ""


def zeilen_lesen(
    *,
    user: User,
    character: Character,
    path: str,
    start: int,
    end: int | None = None,
    root_id: int | None = None,
) -> ReadResult:
    """Lines ``start``..``end`` (1-based, inclusive), at most FILES_READ_MAX_LINES."""
    located = locate(user=user, character=character, path=path, root_id=root_id)
    if isinstance(located, ReadResult):
        return located
    lines, result = _load(located)
    if not result.ok:
        return result
    max_lines = settings.FILES_READ_MAX_LINES
    start = max(1, int(start))
    end = len(lines) if end is None else int(end)
    if end < start:
        return _refuse(
            "zeilen_unlesbar",
            f"Die Zeilenangabe {start}-{end} ergibt keinen Bereich.",
            path=located.rel_path,
            root_id=located.root.id,
        )
    if start > len(lines):
        return _refuse(
            "keine_zeile",
            "Die Datei hat nur eine Zeile."
            if len(lines) == 1
            else f"Die Datei hat nur {len(lines)} Zeilen.",
            path=located.rel_path,
            root_id=located.root.id,
        )
    end = min(end, len(lines))
    if end - start + 1 > max_lines:
        end = start + max_lines - 1
        result.cut = True
    text, end = _bounded_text(lines, start, end, result)
    result.line_start, result.line_end = start, end
    result.text = text
    result.extra["total_lines"] = len(lines)
    return result


def chars_cut_note(limit: int, *, line: int | None = None, next_line: int | None = None) -> str:
    """The German "gekürzt" of a read cut at FILES_READ_MAX_CHARS characters."""
    if line is not None:
        return (
            f"Gekürzt: Zeile {line} ist länger als {limit} Zeichen; gezeigt werden ihre ersten "
            f"{limit} Zeichen."
        )
    if next_line is not None:
        return (
            f"Gekürzt: mehr als {limit} Zeichen; gezeigt werden ganze Zeilen bis Zeile "
            f"{next_line - 1}, weiter geht es ab Zeile {next_line}."
        )
    return f"Gekürzt: mehr als {limit} Zeichen; gezeigt werden die ersten {limit} Zeichen."


def _bounded_text(lines: list[str], start: int, end: int, result: ReadResult) -> tuple[str, int]:
    """Lines ``start``..``end`` joined, at most FILES_READ_MAX_CHARS characters, and the last
    line shown. Whole lines while one fits (``end`` is then the last whole line, so a reader
    paging on from ``end + 1`` misses nothing); a first line longer than the limit alone is cut
    inside the line. A cut says "gekürzt" (``cut``, ``extra['cut_chars']``, ``message``)."""
    limit = int(settings.FILES_READ_MAX_CHARS)
    parts: list[str] = []
    used = 0
    for number in range(start, end + 1):
        line = lines[number - 1]
        need = len(line) + (1 if parts else 0)
        if used + need > limit:
            result.cut = True
            result.extra["cut_chars"] = limit
            if parts:
                end = number - 1
                result.message = chars_cut_note(limit, next_line=number)
            else:
                parts.append(line[:limit])
                end = number
                result.message = chars_cut_note(limit, line=number)
            break
        parts.append(line)
        used += need
    return "\n".join(parts), end


def _cap_text(result: ReadResult) -> ReadResult:
    """A text not built from file lines (zoom levels 1 and 2) bounded the same way."""
    limit = int(settings.FILES_READ_MAX_CHARS)
    if len(result.text) > limit:
        result.text = result.text[:limit]
        result.cut = True
        result.extra["cut_chars"] = limit
        result.message = chars_cut_note(limit)
    return result


def block_map_of(entry: IndexEntry) -> list[dict[str, Any]]:
    """Normalised block map: [{ordinal, heading, line_start, line_end, kind}], from IndexBlock
    rows if present, else from the JSON block map (accepting start/end or line_start/line_end)."""
    blocks = list(
        entry.blocks.order_by("ordinal").values(
            "ordinal", "heading", "kind", "line_start", "line_end"
        )
    )
    if blocks:
        return [dict(b) for b in blocks]
    out: list[dict[str, Any]] = []
    for n, item in enumerate(entry.block_map or [], start=1):
        if not isinstance(item, dict):
            continue
        start = item.get("line_start", item.get("start"))
        end = item.get("line_end", item.get("end"))
        if not isinstance(start, int) or not isinstance(end, int):
            continue
        out.append(
            {
                "ordinal": item.get("ordinal", n) if isinstance(item.get("ordinal"), int) else n,
                "heading": str(item.get("heading") or item.get("title") or ""),
                "kind": str(item.get("kind") or "section"),
                "line_start": start,
                "line_end": end,
            }
        )
    return out


def find_entry(
    *, user: User, character: Character, name: str, root_id: int | None = None
) -> IndexEntry | None:
    """An indexed file of the pair's active roots by relative path or by file name."""
    qs = IndexEntry.objects.filter(
        root__user=user,
        root__character=character,
        root__state=FileRoot.State.ACTIVE,
        state=IndexEntry.State.PRESENT,
    ).select_related("root")
    if root_id is not None:
        qs = qs.filter(root_id=root_id)
    name = name.strip().lstrip("./")
    exact = qs.filter(rel_path=name).first()
    if exact is not None:
        return exact
    return qs.filter(rel_path__endswith="/" + name).order_by("rel_path").first()


def block_lesen(
    *, user: User, character: Character, entry: IndexEntry, block: int | str
) -> ReadResult:
    """A block of the block map, by position (1-based, as a person counts) or heading text."""
    blocks = block_map_of(entry)
    chosen: dict[str, Any] | None = None
    if isinstance(block, int) or str(block).isdigit():
        number = int(block)
        # "Abschnitt 3" may mean the third block or the one headed "3. …".
        chosen = next(
            (b for b in blocks if re.match(rf"^\s*{number}[.)\s]", b["heading"] or "")), None
        ) or (blocks[number - 1] if 1 <= number <= len(blocks) else None)
    else:
        wanted = str(block).casefold()
        chosen = next((b for b in blocks if wanted in (b["heading"] or "").casefold()), None)
    if chosen is None:
        return _refuse(
            "kein_block",
            f"In {entry.rel_path} gibt es keinen Abschnitt „{block}“ "
            f"(die Datei hat {len(blocks)} Abschnitte).",
            path=entry.rel_path,
            root_id=entry.root_id,
        )
    result = zeilen_lesen(
        user=user,
        character=character,
        path=entry.rel_path,
        start=chosen["line_start"],
        end=chosen["line_end"],
        root_id=entry.root_id,
    )
    result.extra["heading"] = chosen["heading"]
    return result


def _about_whole_file(entry: IndexEntry, text: str) -> ReadResult:
    """A text about the whole file (its summary, its block map), capped in characters."""
    return _cap_text(
        ReadResult(
            status="ok",
            root_id=entry.root_id,
            path=entry.rel_path,
            line_start=1,
            line_end=entry.line_count,
            text=text,
        )
    )


def zoom(*, user: User, character: Character, entry: IndexEntry, level: int) -> ReadResult:
    """Three zoom levels: 1 summary, 2 block map, 3 lines (bounded)."""
    located = locate(user=user, character=character, path=entry.rel_path, root_id=entry.root_id)
    if isinstance(located, ReadResult):
        return located
    if level <= 1:
        text = f"{entry.topic}\n{entry.summary}\nStichwörter: {', '.join(entry.keywords)}"
        return _about_whole_file(entry, text.strip())
    if level == 2:
        blocks = block_map_of(entry)
        text = "\n".join(
            f"{n}. {b['heading'] or '(ohne Überschrift)'} "
            f"— Zeilen {b['line_start']}-{b['line_end']}"
            # Numbered by position (1-based) as a person counts; ordinals are storage keys.
            for n, b in enumerate(blocks, start=1)
        )
        return _about_whole_file(entry, text)
    return zeilen_lesen(
        user=user, character=character, path=entry.rel_path, start=1, root_id=entry.root_id
    )


@dataclass
class GrepResult:
    status: str
    step: str = ""
    message: str = ""
    pattern: str = ""
    mode: str = ""  # "exakt" | "gross_klein_egal"
    matches: list[dict[str, Any]] = field(default_factory=list)  # {root_id, path, line, text}
    files_searched: int = 0
    cut: bool = False
    cut_reason: str = ""  # "zeilen" | "zeit" | "anfrage"


def datei_grep(
    *,
    user: User,
    character: Character,
    pattern: str,
    path: str | None = None,
    root_id: int | None = None,
) -> GrepResult:
    """Literal search with line numbers over the pair's indexed files (or one file): exact
    first, then case-folded if the exact search found nothing. Stops at FILES_GREP_MAX_LINES
    matching lines or FILES_GREP_TIME_LIMIT_S."""
    pattern = (pattern or "").strip()
    result = GrepResult(status="ok", pattern=pattern)
    if not pattern:
        return GrepResult(status="fehler", step="leere_anfrage", message="Wonach soll ich suchen?")
    if len(pattern) > settings.FILES_QUERY_MAX_CHARS:
        pattern = pattern[: settings.FILES_QUERY_MAX_CHARS]
        result.pattern = pattern
        result.cut, result.cut_reason = True, "anfrage"
    targets: list[tuple[int | None, str]]
    if path is not None:
        targets = [(root_id, path)]
    else:
        targets = list(
            IndexEntry.objects.filter(
                root__user=user,
                root__character=character,
                root__state=FileRoot.State.ACTIVE,
                state=IndexEntry.State.PRESENT,
            )
            .order_by("root_id", "rel_path")
            .values_list("root_id", "rel_path")
        )
    deadline = time.monotonic() + settings.FILES_GREP_TIME_LIMIT_S
    files: list[tuple[int, str, list[str]]] = []
    for rid, rel in targets:
        if time.monotonic() > deadline:
            result.cut, result.cut_reason = True, "zeit"
            break
        located = locate(user=user, character=character, path=rel, root_id=rid)
        if isinstance(located, ReadResult):
            if path is not None:
                return GrepResult(
                    status="fehler", step=located.step, message=located.message, pattern=pattern
                )
            continue
        lines, loaded = _load(located)
        if loaded.ok:
            files.append((located.root.id, located.rel_path, lines))
    result.files_searched = len(files)
    for mode, match in (
        ("exakt", lambda line: pattern in line),
        ("gross_klein_egal", lambda line: pattern.casefold() in line.casefold()),
    ):
        result.mode = mode
        for rid, rel, lines in files:
            for number, line in enumerate(lines, start=1):
                if match(line):
                    shown = line.strip()
                    match_cut = len(shown) > GREP_LINE_CHARS
                    result.matches.append(
                        {
                            "root_id": rid,
                            "path": rel,
                            "line": number,
                            # A matching line is shown up to GREP_LINE_CHARS, "gekürzt" said.
                            "text": shown[:GREP_LINE_CHARS] + (" … (gekürzt)" if match_cut else ""),
                            "cut": match_cut,
                        }
                    )
                    if len(result.matches) >= settings.FILES_GREP_MAX_LINES:
                        result.cut, result.cut_reason = True, "zeilen"
                        return result
            if time.monotonic() > deadline:
                result.cut, result.cut_reason = True, "zeit"
                return result
        if result.matches:
            return result
    return result
