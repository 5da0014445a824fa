"""File parsers: one abstract base, one subclass per format (CONVENTIONS: khoj's TextToEntries).

A parser turns the bytes the watcher read into plain text whose structure the block map can
read: headings become Markdown ``#`` lines for HTML and DOCX, so ``struktur_analysieren`` works
on one grammar. Anything without a parser is listed as skipped (reason ``format``), not guessed.
"""

from __future__ import annotations

import io
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import ClassVar

# Bytes looked at for binary detection (git's heuristic: a NUL byte in the head).
BINARY_PROBE = 8192


class ParseError(Exception):
    """A named reason why a file could not be read as text (``binaer``, ``format_defekt``)."""

    def __init__(self, step: str, message: str = "") -> None:
        super().__init__(message or step)
        self.step = step
        self.message = message or step


@dataclass
class ParsedText:
    text: str
    # Named observations that are not failures, e.g. "nicht_utf8" (decoded as cp1252).
    notes: list[str] = field(default_factory=list)


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_PROBE]


def decode_text(data: bytes) -> ParsedText:
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return ParsedText(data.decode("utf-8"))
    except UnicodeDecodeError:
        # German files from older editors are mostly Windows-1252; latin-1 never fails.
        try:
            return ParsedText(data.decode("cp1252"), ["nicht_utf8"])
        except UnicodeDecodeError:
            return ParsedText(data.decode("latin-1"), ["nicht_utf8"])


class Parser(ABC):
    format: ClassVar[str]
    extensions: ClassVar[tuple[str, ...]]
    # Text formats are refused when the head holds a NUL byte; container formats are binary.
    text_based: ClassVar[bool] = True

    def parse(self, data: bytes) -> ParsedText:
        if self.text_based and looks_binary(data):
            raise ParseError("binaer", "die Datei enthält Binärdaten")
        return self.extract(data)

    @abstractmethod
    def extract(self, data: bytes) -> ParsedText:
        """Plain text of ``data``; raise ``ParseError`` with a named step when unreadable."""


class MarkdownParser(Parser):
    format = "markdown"
    extensions = (".md", ".markdown", ".mdown")

    def extract(self, data: bytes) -> ParsedText:
        return decode_text(data)


class TextParser(Parser):
    format = "text"
    extensions = (".txt", ".text", ".log", ".csv", ".org")

    def extract(self, data: bytes) -> ParsedText:
        return decode_text(data)


class SourceCodeParser(Parser):
    format = "code"
    extensions = (
        ".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".c", ".h", ".cpp", ".hpp", ".cs", ".go",
        ".rs", ".rb", ".php", ".sh", ".bash", ".sql", ".css", ".scss", ".json", ".yaml", ".yml",
        ".toml", ".ini", ".cfg", ".kt", ".swift", ".lua", ".pl", ".r", ".scala", ".xml",
    )  # fmt: skip

    def extract(self, data: bytes) -> ParsedText:
        return decode_text(data)


class RestructuredTextParser(Parser):
    format = "rst"
    extensions = (".rst", ".rest")

    def extract(self, data: bytes) -> ParsedText:
        return decode_text(data)


class _HtmlText(HTMLParser):
    SKIP: ClassVar[set[str]] = {"script", "style", "head", "noscript", "template"}
    BLOCK: ClassVar[set[str]] = {"p", "div", "br", "li", "tr", "section", "article", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self._skip += 1
        elif len(tag) == 2 and tag[0] == "h" and tag[1] in "123456":
            self.parts.append("\n\n" + "#" * int(tag[1]) + " ")
        elif tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self._skip = max(0, self._skip - 1)
        elif (len(tag) == 2 and tag[0] == "h") or tag in {"p", "div", "pre"}:
            self.parts.append("\n\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


class HtmlParser(Parser):
    format = "html"
    extensions = (".html", ".htm", ".xhtml")

    def extract(self, data: bytes) -> ParsedText:
        decoded = decode_text(data)
        reader = _HtmlText()
        reader.feed(decoded.text)
        reader.close()
        lines = [line.strip() for line in "".join(reader.parts).splitlines()]
        text = "\n".join(lines)
        while "\n\n\n" in text:
            text = text.replace("\n\n\n", "\n\n")
        return ParsedText(text.strip() + "\n", decoded.notes)


class PdfParser(Parser):
    format = "pdf"
    extensions = (".pdf",)
    text_based = False

    def extract(self, data: bytes) -> ParsedText:
        from pypdf import PdfReader
        from pypdf.errors import PdfReadError

        try:
            reader = PdfReader(io.BytesIO(data))
            pages = [page.extract_text() or "" for page in reader.pages]
        except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
            raise ParseError("format_defekt", f"PDF nicht lesbar: {exc}") from exc
        return ParsedText("\n\n".join(p.strip() for p in pages).strip() + "\n")


class DocxParser(Parser):
    format = "docx"
    extensions = (".docx",)
    text_based = False

    def extract(self, data: bytes) -> ParsedText:
        import docx

        try:
            document = docx.Document(io.BytesIO(data))
        except Exception as exc:  # python-docx raises zip/xml/value errors alike
            raise ParseError("format_defekt", f"DOCX nicht lesbar: {exc}") from exc
        lines: list[str] = []
        for paragraph in document.paragraphs:
            style = (paragraph.style.name if paragraph.style is not None else "") or ""
            text = paragraph.text.strip()
            if style.startswith("Heading") and text:
                level = style.rsplit(" ", 1)[-1]
                depth = int(level) if level.isdigit() else 1
                lines += ["", "#" * min(depth, 6) + " " + text, ""]
            elif style == "Title" and text:
                lines += ["# " + text, ""]
            else:
                lines.append(text)
        for table in document.tables:
            lines.append("")
            for row in table.rows:
                lines.append("| " + " | ".join(c.text.strip() for c in row.cells) + " |")
        return ParsedText("\n".join(lines).strip() + "\n")


PARSERS: tuple[Parser, ...] = (
    MarkdownParser(),
    TextParser(),
    SourceCodeParser(),
    RestructuredTextParser(),
    HtmlParser(),
    PdfParser(),
    DocxParser(),
)
_BY_EXTENSION: dict[str, Parser] = {ext: p for p in PARSERS for ext in p.extensions}
_BY_FORMAT: dict[str, Parser] = {p.format: p for p in PARSERS}


def parser_for_name(name: str) -> Parser | None:
    ext = os.path.splitext(name)[1].lower()
    return _BY_EXTENSION.get(ext)


def parser_for_format(fmt: str) -> Parser | None:
    return _BY_FORMAT.get(fmt)
