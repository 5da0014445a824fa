"""Nova's replies as HTML: Markdown rendered, everything else escaped (conversation/rendering.py).

Model output and file excerpts are untrusted: no tag, attribute or link scheme outside the
allow-list may reach the chat page.
"""

from __future__ import annotations

import re

import pytest

from conversation.pipeline import offline
from conversation.rendering import reply_html, strip_internal_tags


@pytest.mark.parametrize(
    ("reply", "forbidden"),
    [
        pytest.param("Hallo <script>alert(1)</script>", "<script", id="script-tag"),
        pytest.param("[klick](javascript:alert(1))", "<a", id="javascript-link"),
        pytest.param("<a href='javascript:alert(1)'>x</a>", "<a href", id="raw-javascript-anchor"),
        pytest.param("![bild](javascript:alert(1))", "<img", id="javascript-image"),
        pytest.param('<img src=x onerror="alert(1)">', "<img", id="img-onerror"),
        pytest.param("<b onmouseover=alert(1)>fett</b>", "<b", id="raw-html-bold"),
        pytest.param("[x](JaVaScRiPt:alert(1) 'titel')", "<a", id="mixed-case-javascript"),
        pytest.param("[x](vbscript:msgbox(1))", "<a", id="vbscript-link"),
        pytest.param("<iframe src='https://böse.example'></iframe>", "<iframe", id="iframe"),
        pytest.param("[x](data:text/html;base64,PHNjcmlwdD4=)", "<a", id="data-link"),
    ],
)
def test_html_and_dangerous_links_in_a_model_reply_never_become_markup(
    reply: str, forbidden: str
) -> None:
    html = reply_html(reply)
    # Escaped as text ("&lt;b …") it is harmless; as markup it is not.
    assert forbidden not in html
    assert set(re.findall(r"<([a-z0-9]+)", html)) <= {"p", "br"}


def test_raw_html_in_a_model_reply_is_shown_as_text() -> None:
    html = reply_html('Sieh: <img src=x onerror="alert(1)"> und <script>x()</script>')
    assert "&lt;img src=x onerror=" in html and "&lt;script&gt;x()&lt;/script&gt;" in html


def test_raw_html_in_a_file_excerpt_of_the_offline_answer_is_escaped() -> None:
    record = {
        "citation": "notizen.md:3-4",
        "excerpt": '<img src=x onerror="alert(1)">\n<script>steal()</script>',
        "archived": False,
    }
    answer = offline.composer([], {"records": [record]})
    html = reply_html(answer)
    assert "<img" not in html and "<script" not in html
    assert "&lt;script&gt;steal()&lt;/script&gt;" in html
    assert "notizen.md:3-4" in html


def test_markdown_bold_lists_tables_and_code_are_rendered() -> None:
    html = reply_html(
        "**Wichtig:**\n\n- Fliesen\n- Fenster\n\n| Tag | Termin |\n|---|---|\n| Do | 14 Uhr |\n\n"
        "```\nx < y\n```"
    )
    assert "<strong>Wichtig:</strong>" in html
    assert "<ul>" in html and "<li>Fliesen</li>" in html and "<li>Fenster</li>" in html
    assert "<table>" in html and "<th>Tag</th>" in html and "<td>14 Uhr</td>" in html
    assert "<pre><code>x &lt; y" in html


def test_http_links_are_kept_and_open_without_referrer() -> None:
    html = reply_html("[Plan](https://example.org/plan) und [alt](http://example.org/)")
    assert '<a href="https://example.org/plan" rel="noopener noreferrer">Plan</a>' in html
    assert '<a href="http://example.org/" rel="noopener noreferrer">alt</a>' in html


def test_line_breaks_of_quoted_excerpts_survive() -> None:
    assert "Donnerstag 14 Uhr<br>" in reply_html("Donnerstag 14 Uhr\nTreffpunkt Baustelle")


def test_the_read_agents_search_tags_do_not_reach_the_person() -> None:
    # The shape files/agent_read/execute.py::_found_entry writes, passed through offline.
    text = "- hausbau.md:2-3 [stark, beide]:\n  > Donnerstag\n- plan.md:1 [schwach, dicht]:"
    assert strip_internal_tags(text) == "- hausbau.md:2-3:\n  > Donnerstag\n- plan.md:1:"
    html = reply_html(text)
    assert "stark" not in html and "beide" not in html and "dicht" not in html
