"""Enrichment of a new or changed file: topic, summary, keywords.

With a language model: one JSON call (purpose ``files.enrich``) read by a checked reader. The
offline backend answers the same purpose by extraction (DESIGN.md "When no language model is
configured"): title/first heading → topic, first paragraph → summary, TF-IDF terms → keywords.
A model answer that is not the expected JSON is a named note, and the file is enriched by
extraction instead: the run goes on.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings

from novaberg.llm import get_gateway
from novaberg.parsers import loads_checked

PURPOSE = "files.enrich"
MAX_KEYWORDS = 8

ENRICH_PROMPT = (
    "Du verschlagwortest eine Datei für einen Suchindex. Antworte nur mit einem JSON-Objekt: "
    '{"topic": "Thema in wenigen Worten", "summary": "ein bis zwei Sätze, was in der Datei '
    'steht", "keywords": ["bis zu acht Schlagwörter"]}. Erfinde nichts, was nicht in der Datei '
    "steht."
)

_WORD = re.compile(r"[^\W\d_][\w\-]*[^\W_]|[^\W\d_]{3,}", re.UNICODE)
STOPWORDS = frozenset(
    """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anders auch auf aus bei beim bin bis bist da dabei damit dann das dass dein deine
    dem den denn der des dessen deshalb die dies diese diesem diesen dieser dieses doch dort du
    durch ein eine einem einen einer eines einige er es etwas euer für gegen gewesen hab habe
    haben hat hatte hier hin hinter ich ihr ihre im in indem ins ist jede jedem jeden jeder jedes
    jetzt kann kein keine können man manche mein meine mit muss nach nicht nichts noch nun nur
    ob oder ohne sehr sein seine sich sie sind so solche soll sollte sondern sonst über um und
    uns unser unter vom von vor wann war waren was weil weiter welche wenn wer werden wie wieder
    will wir wird wo wurde würde zu zum zur zwar zwischen noch schon mehr ganz immer
    the and for that this with from are was were have has not but you your can will into
    of to in is it on as be by or an at if we our they their them its all any
    """.split()
)


@dataclass
class Enrichment:
    topic: str
    summary: str
    keywords: list[str]
    source: str  # "llm" | "offline" | "extraktion_ersatz"
    notes: list[str] = field(default_factory=list)


class EnrichReadError(Exception):
    def __init__(self, step: str) -> None:
        super().__init__(step)
        self.step = step


def _is_structure_line(line: str) -> bool:
    s = line.strip()
    return (
        s.startswith("#")
        or s.startswith("```")
        or s.startswith("~~~")
        or s.startswith("|")
        or bool(re.fullmatch(r"([=\-~^\"'`*+])\1{2,}", s))
    )


def _topic(text: str, rel_path: str, blocks: list[dict[str, Any]]) -> str:
    headings = [b for b in blocks if b.get("kind") == "section" and b.get("heading")]
    if headings:
        top = min(headings, key=lambda b: (b["level"], b["line_start"]))
        return str(top["heading"])[:200]
    for line in text.splitlines():
        s = line.strip()
        if s:
            if len(s) <= 100 and not s.endswith((".", ",", ";")):
                return s[:200]
            break
    return PurePosixPath(rel_path).stem.replace("_", " ").replace("-", " ")[:200]


def _summary(text: str, limit: int = 300) -> str:
    paragraph: list[str] = []
    in_fence = False
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not s or _is_structure_line(s):
            if paragraph:
                break
            continue
        paragraph.append(s)
    joined = " ".join(paragraph)
    if len(joined) <= limit:
        return joined
    cut = joined[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def _terms(text: str) -> list[str]:
    return [
        w.lower()
        for w in _WORD.findall(text)
        if len(w) >= 3 and w.lower() not in STOPWORDS and not w.isdigit()
    ]


def _keywords(text: str, limit: int = MAX_KEYWORDS) -> list[str]:
    """TF-IDF with the file's paragraphs as the documents: deterministic per content (a rerun
    after a crash learns the same keywords), and it prefers the terms that carry a part of the
    file over those spread evenly through it."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if not paragraphs:
        return []
    tf = Counter(_terms(text))
    df: Counter[str] = Counter()
    for p in paragraphs:
        df.update(set(_terms(p)))
    n = len(paragraphs)
    scored = {
        term: (1 + math.log(count)) * (1 + math.log((1 + n) / (1 + df[term])))
        for term, count in tf.items()
    }
    ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))
    return [term[:100] for term, _ in ranked[:limit]]


def heading_terms(heading: str) -> list[str]:
    """The words of a heading or block title that can be keywords (DESIGN.md "Files":
    headings and block titles are keywords of their block): every content word, in order."""
    out: list[str] = []
    for term in _terms(heading):
        if term[:100] not in out:
            out.append(term[:100])
    return out


def block_terms(text: str, limit: int) -> list[str]:
    """A block's own extracted terms (the same TF-IDF as a file's keywords, over the block)."""
    return _keywords(text, limit=limit)


def extract(text: str, rel_path: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "topic": _topic(text, rel_path, blocks),
        "summary": _summary(text),
        "keywords": _keywords(text),
    }


def offline_handler(messages: list[dict[str, str]], hints: dict[str, Any]) -> str:
    """The offline backend's answer for ``files.enrich``: extraction, as JSON."""
    return json.dumps(
        extract(str(hints.get("text", "")), str(hints.get("path", "")), hints.get("blocks") or [])
    )


def read_enrichment(raw: str) -> dict[str, Any]:
    """Checked reader of the model's answer. ``null`` counts as a missing key; a wrong type or
    a non-object ends with a named step, never a ``TypeError``."""
    try:
        data = loads_checked(raw)
    except (ValueError, TypeError) as exc:
        raise EnrichReadError("llm_kein_json") from exc
    if not isinstance(data, dict):
        raise EnrichReadError("llm_kein_objekt")
    topic = data.get("topic")
    summary = data.get("summary")
    keywords = data.get("keywords")
    if topic is None or summary is None:
        raise EnrichReadError("llm_feld_fehlt")
    if not isinstance(topic, str) or not isinstance(summary, str):
        raise EnrichReadError("llm_feld_falscher_typ")
    if keywords is None:
        keywords = []
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise EnrichReadError("llm_feld_falscher_typ")
    clean = [k.strip()[:100] for k in keywords if k.strip()][:MAX_KEYWORDS]
    return {"topic": topic.strip()[:200], "summary": summary.strip()[:1000], "keywords": clean}


def enrich(text: str, rel_path: str, blocks: list[dict[str, Any]]) -> Enrichment:
    excerpt = text[: settings.FILES_ENRICH_MAX_CHARS]
    gateway = get_gateway()
    result = gateway.chat(
        [
            {"role": "system", "content": ENRICH_PROMPT},
            {"role": "user", "content": f"Datei: {rel_path}\n\n{excerpt}"},
        ],
        purpose=PURPOSE,
        json_mode=True,
        hints={"text": excerpt, "path": rel_path, "blocks": blocks},
    )
    source = "offline" if gateway.name == "offline" else "llm"
    if result.ok:
        try:
            data = read_enrichment(result.text)
            return Enrichment(data["topic"], data["summary"], data["keywords"], source)
        except EnrichReadError as exc:
            note = exc.step
    else:
        note = f"llm_{result.failure.step}" if result.failure else "llm_fehler"
    data = extract(excerpt, rel_path, blocks)
    return Enrichment(
        data["topic"], data["summary"], data["keywords"], "extraktion_ersatz", notes=[note]
    )
