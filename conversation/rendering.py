"""Nova's replies as safe HTML: Markdown rendered by markdown-it-py, then sanitised by nh3.

Two locks, on purpose: markdown-it runs with ``html`` off, so raw HTML in a model's reply or
in a file excerpt is escaped as text, and nh3 then keeps only an allow-list of tags and
attributes, so nothing the renderer could ever emit (or a future plugin) reaches the page as
markup it should not. Links keep only http/https and always get ``rel="noopener noreferrer"``.
"""

from __future__ import annotations

import re

import nh3
from markdown_it import MarkdownIt

# The search tags the read agent writes after each hit ("[stark, beide]",
# files/agent_read/execute.py::_found_entry) are for the pipeline, not for the person; the
# offline composer passes the agent's task text through verbatim, so they reach the reply.
_INTERNAL_TAG = re.compile(
    r"[ \t]*\[(?:stark|mittel|schwach),\s*(?:dicht|lexikalisch|beide)\]",
    re.IGNORECASE,
)

ALLOWED_TAGS = {
    "p",
    "br",
    "strong",
    "em",
    "del",
    "s",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "hr",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "ol": {"start"},
    "th": {"style"},
    "td": {"style"},
}

# "breaks": a single line break stays a line break (excerpts are quoted line by line).
_MARKDOWN = MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(
    ["table", "strikethrough"]
)


def strip_internal_tags(text: str) -> str:
    """``text`` without the pipeline's internal search tags."""
    return _INTERNAL_TAG.sub("", text)


def reply_html(text: str) -> str:
    """Nova's reply ``text`` (Markdown, untrusted: model output and file excerpts) as HTML that
    is safe to insert into the chat page."""
    rendered = _MARKDOWN.render(strip_internal_tags(text or ""))
    return nh3.clean(
        rendered,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https"},
        link_rel="noopener noreferrer",
        # Table alignment from markdown-it ("text-align:right") is the only style kept.
        filter_style_properties={"text-align"},
        strip_comments=True,
    )
