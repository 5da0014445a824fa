"""Parsers (one per format) and the block map, table-driven."""

from __future__ import annotations

import io

import docx
import pytest

from files.watcher.enrich import extract, read_enrichment
from files.watcher.parsers import ParseError, parser_for_name
from files.watcher.structure import struktur_analysieren


def _pdf(text: str) -> bytes:
    """A minimal one-page PDF with ``text`` in Helvetica (valid xref offsets)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(f"{i} 0 obj\n".encode() + body + b"\nendobj\n")
    xref = out.tell()
    out.write(f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode())
    for off in offsets:
        out.write(f"{off:010d} 00000 n \n".encode())
    out.write(
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out.getvalue()


def _docx() -> bytes:
    document = docx.Document()
    document.add_heading("Reiseplan", level=1)
    document.add_paragraph("Wir fahren im Mai nach Tirol.")
    table = document.add_table(rows=1, cols=2)
    table.rows[0].cells[0].text = "Tag"
    table.rows[0].cells[1].text = "Ziel"
    buf = io.BytesIO()
    document.save(buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "fmt", "expect"),
    [
        pytest.param("a.md", b"# Titel\n", "markdown", "# Titel", id="markdown"),
        pytest.param("a.txt", "Grüße".encode(), "text", "Grüße", id="text"),
        pytest.param("a.py", b"def f():\n    pass\n", "code", "def f", id="code"),
        pytest.param("a.rst", b"Titel\n=====\n", "rst", "Titel", id="rst"),
        pytest.param(
            "a.html",
            b"<html><head><script>x()</script></head><body><h2>Kopf</h2><p>Absatz</p></body>",
            "html",
            "## Kopf\n\nAbsatz",
            id="html",
        ),
        pytest.param("a.pdf", _pdf("Hallo PDF Welt"), "pdf", "Hallo PDF Welt", id="pdf"),
        pytest.param("a.docx", _docx(), "docx", "# Reiseplan", id="docx"),
    ],
)
def test_each_format_has_its_parser(name: str, data: bytes, fmt: str, expect: str) -> None:
    parser = parser_for_name(name)
    assert parser is not None and parser.format == fmt
    text = parser.parse(data).text
    assert expect in text
    assert "x()" not in text


def test_docx_table_becomes_a_table_block() -> None:
    text = parser_for_name("a.docx").parse(_docx()).text  # type: ignore[union-attr]
    kinds = [b["kind"] for b in struktur_analysieren(text, "docx")]
    assert "table" in kinds and "| Tag | Ziel |" in text


def test_unknown_format_is_not_guessed() -> None:
    assert parser_for_name("bild.png") is None and parser_for_name("Makefile") is None


def test_binary_text_file_and_broken_pdf_are_named() -> None:
    with pytest.raises(ParseError) as binary:
        parser_for_name("a.txt").parse(b"ab\x00cd")  # type: ignore[union-attr]
    assert binary.value.step == "binaer"
    with pytest.raises(ParseError) as broken:
        parser_for_name("a.pdf").parse(b"%PDF-1.4 kaputt")  # type: ignore[union-attr]
    assert broken.value.step == "format_defekt"


def test_non_utf8_is_decoded_and_noted() -> None:
    parsed = parser_for_name("a.txt").parse("Größe".encode("cp1252"))  # type: ignore[union-attr]
    assert parsed.text == "Größe" and parsed.notes == ["nicht_utf8"]


def test_block_map_sections_code_and_tables_with_line_ranges() -> None:
    text = "Vorwort\n\n# Eins\nText\n\n## Zwei\n```\ncode\n```\n| a | b |\n| 1 | 2 |\nEnde\n"
    blocks = struktur_analysieren(text, "markdown")
    assert blocks == [
        {"kind": "section", "heading": "", "level": 0, "line_start": 1, "line_end": 1},
        {"kind": "section", "heading": "Eins", "level": 1, "line_start": 3, "line_end": 4},
        {"kind": "section", "heading": "Zwei", "level": 2, "line_start": 6, "line_end": 12},
        {"kind": "code", "heading": "", "level": 0, "line_start": 7, "line_end": 9},
        {"kind": "table", "heading": "", "level": 0, "line_start": 10, "line_end": 11},
    ]


def test_rst_headings_by_underline() -> None:
    blocks = struktur_analysieren("Titel\n=====\n\nText\n\nUnter\n-----\nmehr\n", "rst")
    assert [(b["heading"], b["level"], b["line_start"]) for b in blocks] == [
        ("Titel", 1, 1),
        ("Unter", 2, 6),
    ]


def test_offline_extraction_topic_summary_keywords() -> None:
    text = "# Sauerteig\n\nSauerteig braucht Zeit und Mehl.\n\nRoggen und Roggenmehl.\n"
    data = extract(text, "brot.md", struktur_analysieren(text, "markdown"))
    assert data["topic"] == "Sauerteig"
    assert data["summary"] == "Sauerteig braucht Zeit und Mehl."
    assert "sauerteig" in data["keywords"] and "und" not in data["keywords"]


@pytest.mark.parametrize(
    ("raw", "step"),
    [
        pytest.param("kein json", "llm_kein_json", id="not-json"),
        pytest.param("[1, 2]", "llm_kein_objekt", id="array"),
        pytest.param('{"topic": null, "summary": "x"}', "llm_feld_fehlt", id="null-topic"),
        pytest.param('{"topic": 3, "summary": "x"}', "llm_feld_falscher_typ", id="int-topic"),
        pytest.param(
            '{"topic": "t", "summary": "s", "keywords": "a,b"}',
            "llm_feld_falscher_typ",
            id="keywords-string",
        ),
    ],
)
def test_checked_reader_names_every_bad_answer(raw: str, step: str) -> None:
    from files.watcher.enrich import EnrichReadError

    with pytest.raises(EnrichReadError) as err:
        read_enrichment(raw)
    assert err.value.step == step
