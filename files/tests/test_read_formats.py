"""Reads return the PARSED text the index was built from, in every supported format (issue 9).

Each file is indexed by the product's own watcher; then every block of its block map is read
through GET /api/roots/{id}/file/?lines=a-b. The lines a citation names must be the lines the
viewer shows: for PDF, DOCX and HTML that is the parser's text, never the raw bytes.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from conversation.models import Character
from files import reading
from files.models import FileRoot, IndexEntry
from files.tests.watcher_helpers import make_root, write
from files.watcher import index_root_run
from files.watcher.parsers import parser_for_name

pytestmark = pytest.mark.django_db


def make_pdf(lines: list[str]) -> bytes:
    """A real one-page PDF (Helvetica, one text line per entry), written by hand: no PDF
    writer is installed, and pypdf reads this the way it reads any simple PDF."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    ops = ["BT", "/F1 12 Tf", "14 TL", "72 760 Td"]
    ops += [
        f"({esc(line)}) Tj" if i == 0 else f"T* ({esc(line)}) Tj" for i, line in enumerate(lines)
    ]
    ops.append("ET")
    stream = "\n".join(ops).encode("cp1252")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Brennbericht", level=1)
    document.add_paragraph("Der Ofen wurde am Montag beschickt.")
    document.add_heading("Glasurbrand", level=2)
    document.add_paragraph("Glasurbrand bei 1240 Grad für Steinzeug.")
    document.add_paragraph("Danach langsam abkühlen lassen.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


HTML = """<!doctype html>
<html><head><title>Kopf</title><style>p { color: red; }</style></head>
<body><h1>Brennplan</h1><p>Der Ofen steht im Keller.</p>
<h2>Glasurbrand</h2><p>Glasurbrand bei 1240 Grad für Steinzeug.</p>
<script>var geheim = 1;</script></body></html>
"""

# name -> (content, a phrase a person would read in the section headed "Glasurbrand",
#          raw markers that must never reach a reader)
FILES: dict[str, tuple[str | bytes, str, list[str]]] = {
    "notiz.md": (
        "# Brennplan\n\nDer Ofen steht im Keller.\n\n## Glasurbrand\n\n"
        "Glasurbrand bei 1240 Grad für Steinzeug.\n",
        "Glasurbrand bei 1240 Grad für Steinzeug.",
        [],
    ),
    "liste.txt": (
        "Brennplan\n\nGlasurbrand bei 1240 Grad für Steinzeug.\n",
        "Glasurbrand bei 1240 Grad für Steinzeug.",
        [],
    ),
    "werte.csv": (
        "Brand,Grad,Ton\nSchrühbrand,900,alle\nGlasurbrand,1240,Steinzeug\n",
        "Glasurbrand,1240,Steinzeug",
        [],
    ),
    "anleitung.rst": (
        "Brennplan\n=========\n\nDer Ofen steht im Keller.\n\nGlasurbrand\n-----------\n\n"
        "Glasurbrand bei 1240 Grad für Steinzeug.\n",
        "Glasurbrand bei 1240 Grad für Steinzeug.",
        [],
    ),
    "ofen.py": (
        'def glasurbrand():\n    """Glasurbrand bei 1240 Grad für Steinzeug."""\n    return 1240\n',
        '"""Glasurbrand bei 1240 Grad für Steinzeug."""',
        [],
    ),
    "seite.html": (HTML, "Glasurbrand bei 1240 Grad für Steinzeug.", ["<h2>", "<p>", "geheim"]),
    "kurven.pdf": (
        make_pdf(
            [
                "Brennkurven",
                "Schrühbrand bei 900 Grad.",
                "Glasurbrand bei 1240 Grad für Steinzeug.",
                "Abkühlen über Nacht.",
            ]
        ),
        "Glasurbrand bei 1240 Grad für Steinzeug.",
        ["%PDF", "endobj", "Tj"],
    ),
    "bericht.docx": (
        make_docx(),
        "Glasurbrand bei 1240 Grad für Steinzeug.",
        ["PK", "word/document.xml", "<w:"],
    ),
}


@pytest.fixture
def root(user: Any, nova: Character, tmp_path: Path) -> FileRoot:
    base = tmp_path / "ofen"
    for name, (content, _, _) in FILES.items():
        write(base, name, content)
    root = make_root(user, nova, base)
    report = index_root_run(root_id=root.pk)
    assert report.outcome == "fertig", report.as_json()
    assert report.counts["new"] == len(FILES), report.counts
    return root


def parsed_lines(root: FileRoot, name: str) -> list[str]:
    parser = parser_for_name(name)
    assert parser is not None
    return parser.parse((Path(root.path) / name).read_bytes()).text.splitlines()


@pytest.mark.parametrize("name", list(FILES))
def test_every_block_the_index_cites_reads_as_the_parsed_lines(
    root: FileRoot, api: APIClient, name: str
) -> None:
    _, phrase, raw_markers = FILES[name]
    entry = IndexEntry.objects.get(root=root, rel_path=name)
    blocks = list(entry.blocks.order_by("ordinal"))
    assert blocks, f"{name}: the index has no block map"
    expected = parsed_lines(root, name)
    assert entry.line_count == len(expected)
    shown = []
    for block in blocks:
        lines = f"{block.line_start}-{block.line_end}"
        response = api.get(f"/api/roots/{root.pk}/file/", {"path": name, "lines": lines})
        assert response.status_code == 200, response.content
        body = response.json()
        assert body["lines"] == lines and body["changed"] is False
        assert body["text"] == "\n".join(expected[block.line_start - 1 : block.line_end])
        if block.heading:
            assert block.heading in body["text"].splitlines()[0]
        shown.append(body["text"])
    everything = "\n".join(shown)
    assert phrase in everything  # what a person reads, in the section the index names
    for marker in raw_markers:
        assert marker not in everything, f"{name}: raw bytes ({marker!r}) reached the reader"


@pytest.mark.parametrize("name", ["kurven.pdf", "bericht.docx", "seite.html"])
def test_the_whole_file_reads_as_the_indexed_text(
    root: FileRoot, api: APIClient, name: str
) -> None:
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": name})
    assert response.status_code == 200, response.content
    body = response.json()
    expected = parsed_lines(root, name)
    assert body["text"].splitlines() == expected
    assert body["lines"] == f"1-{len(expected)}"
    entry = IndexEntry.objects.get(root=root, rel_path=name)
    assert body["lines"] == f"1-{entry.line_count}"


def test_grep_finds_the_line_of_the_parsed_pdf(root: FileRoot, user: Any, nova: Character) -> None:
    result = reading.datei_grep(user=user, character=nova, pattern="1240 Grad", path="kurven.pdf")
    expected = parsed_lines(root, "kurven.pdf")
    assert [m["line"] for m in result.matches] == [
        n for n, line in enumerate(expected, start=1) if "1240 Grad" in line
    ]
    assert result.matches and result.matches[0]["text"].startswith("Glasurbrand bei 1240")


def test_a_damaged_pdf_is_a_named_refusal_not_garbage(
    root: FileRoot, api: APIClient, tmp_path: Path
) -> None:
    write(Path(root.path), "kaputt.pdf", b"%PDF-1.4\nnur Anfang, kein Dokument\n")
    response = api.get(f"/api/roots/{root.pk}/file/", {"path": "kaputt.pdf"})
    assert response.status_code == 409  # the file is there, its content cannot be read
    assert response.json()["step"] == "format_defekt"
    assert "%PDF" not in response.json().get("text", "")
