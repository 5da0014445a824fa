"""Provenance in the final words (seed 003 §2.3, §3.3; seed 002 §1a, §1a.4).

The responder may leave things out but never add facts, and what comes from files may only be
said as records ("In deinen Unterlagen steht …", "Ich habe Aufzeichnungen, die …", with the
citation) — never "ich weiß". After the responder the reply is compared with the composer's
content:

- ``ohne_herkunft``: a record-based statement of the content whose facts reach the reply while
  the reply dropped both its hedge and its citation;
- ``ich_weiss``: the reply says "ich weiß" about something that came from records;
- ``ohne_quelle``: a reply sentence that brings a fact (a number, a name) that stands nowhere in
  the content and carries no delivered citation;
- the deviation measure gets a threshold: above it the turn is marked and the new words kept.
"""

from __future__ import annotations

import re
from typing import Any

from conversation.pipeline.words import STOPWORDS, content_words

# seed 003 §3.3: above this share of new content words the reply has drifted from the content.
DEVIATION_THRESHOLD = 0.5
# A content sentence counts as reaching the reply when this share of its content words does.
CARRIED_SHARE = 0.5

# "notes/plan.md:3-7", "plan.md:12", "Zeile" forms are not citations. A path needs an extension.
CITATION_RE = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}):(\d+)(?:[-–](\d+))?"
)


def cited(reply: str) -> list[tuple[str, int, int]]:
    out = []
    for m in CITATION_RE.finditer(reply):
        start = int(m.group(2))
        end = int(m.group(3)) if m.group(3) else start
        out.append((m.group(1), start, end))
    return out


HEDGE_RE = re.compile(
    r"\b(?:in\s+(?:deinen|ihren|den|meinen)\s+(?:unterlagen|aufzeichnungen|notizen|dateien)|"
    r"(?:ich\s+habe|habe\s+ich)\s+aufzeichnungen|aufzeichnung(?:en)?\b|unterlagen\b|"
    r"laut\s+(?:deinen|ihren|den)\s+(?:unterlagen|aufzeichnungen|notizen|dateien)|"
    r"(?:deine|ihre)[rn]?\s+(?:notizen|datei(?:en)?)|"
    r"steht\s+in\s+(?:deinen|ihren|den)\b)",
    re.I,
)
I_KNOW_RE = re.compile(r"\bich\s+weiß\b|\bweiß\s+ich\b", re.I)
_TOKEN_RE = re.compile(r"[A-Za-zÄÖÜäöüß]+|\d+(?:[.,:]\d+)?")


def sentences(text: str) -> list[str]:
    # A citation "hausbau.md:3-7" holds a dot; split only at a dot followed by space or end.
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [p.strip() for p in parts if p.strip()]


def hedged(sentence: str) -> bool:
    return bool(HEDGE_RE.search(sentence))


def _has_citation(sentence: str) -> bool:
    return bool(cited(sentence))


def _fact_tokens(sentence: str) -> set[str]:
    """Numbers and capitalised words past the first word: in German mostly names and nouns."""
    tokens = _TOKEN_RE.findall(sentence)
    out: set[str] = set()
    for i, token in enumerate(tokens):
        if token[0].isdigit():
            out.add(token)
        elif i > 0 and token[0].isupper() and token.lower() not in STOPWORDS and len(token) > 2:
            out.add(token.lower())
    return out


def _adds_a_fact(sentence: str, content_facts: set[str]) -> bool:
    """A new number, or two new capitalised words: German capitalises every noun, so one new
    noun is often only style ("Schöner Name!"); a number or a second name is a claim."""
    new = _fact_tokens(sentence) - content_facts
    return any(token[0].isdigit() for token in new) or len(new) >= 2


def record_statements(content: str, records: list[dict[str, Any]]) -> list[str]:
    """The content's sentences that say something from records: hedged, or citing a record, or
    (in a paragraph opened by a hedge) the lines that follow it."""
    paths = [str(r.get("path") or "") for r in records]
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", content):
        lines = sentences(paragraph)
        opened = bool(lines) and hedged(lines[0])
        for line in lines:
            if hedged(line) or opened or any(p and p in line for p in paths):
                if content_words(HEDGE_RE.sub(" ", line)):
                    out.append(line)
    return out


def provenance_check(reply: str, content: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    """What the reply did with the provenance the content carried."""
    statements = record_statements(content, records) if records else []
    reply_lines = sentences(reply)
    reply_hedged = any(hedged(s) or _has_citation(s) for s in reply_lines)
    lost: list[str] = []
    i_know: list[str] = []
    for statement in statements:
        words = content_words(CITATION_RE.sub(" ", HEDGE_RE.sub(" ", statement)))
        for line in reply_lines:
            carried = words & content_words(line)
            if not words or len(carried) / len(words) < CARRIED_SHARE:
                continue
            if I_KNOW_RE.search(line) and line not in i_know:
                i_know.append(line)
            elif not (hedged(line) or _has_citation(line) or reply_hedged) and line not in lost:
                lost.append(line)
    content_facts = _fact_tokens(content) | {w.lower() for w in _TOKEN_RE.findall(content)}
    unsourced = [
        line
        for line in reply_lines
        if not _has_citation(line) and _adds_a_fact(HEDGE_RE.sub(" ", line), content_facts)
    ]
    flagged = bool(lost or i_know or unsourced)
    return {
        "outcome": "herkunft_verloren" if flagged else "ok",
        "aussagen_aus_aufzeichnungen": len(statements),
        "ohne_herkunft": lost,
        "ich_weiss": i_know,
        "ohne_quelle": unsourced,
    }


def deviation_check(deviation: float | None, new_words: list[str]) -> dict[str, Any]:
    """The deviation measure with its threshold and action (seed 003 §3.3)."""
    above = deviation is not None and deviation > DEVIATION_THRESHOLD
    return {
        "wert": deviation,
        "schwelle": DEVIATION_THRESHOLD,
        "ueber_schwelle": above,
        "neue_woerter": new_words[:40] if above else [],
    }
