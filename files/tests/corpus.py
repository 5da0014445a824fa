"""A small German corpus for the retrieval tests, and a stand-in indexer for it.

The stand-in fills ``IndexEntry`` / ``IndexBlock`` rows directly (topic, summary, keywords,
block map with line ranges, both search vectors, real embeddings) so the retrieval tests do not
depend on the watcher's internals (issue 4). It uses only the public model fields.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.postgres.search import SearchVector
from django.db.models import Value
from django.utils import timezone

from files.models import FileRoot, IndexBlock, IndexEntry
from novaberg.embeddings import embed

# Path -> (text, keywords). Keywords stand for what the enricher extracts from the file.
CORPUS: dict[str, tuple[str, list[str] | None]] = {
    "notizen/technik/postgres-backup.md": (
        """# Datensicherung der PostgreSQL-Datenbank

Jede Nacht sichert ein Cronjob die Datenbank mit pg_dump in das Verzeichnis /srv/backup.
Die Sicherungen werden vierzehn Tage aufbewahrt und danach gelöscht.

## Einrichtung

Der Cronjob läuft um 2:30 Uhr als Benutzer postgres.
Das Format ist das benutzerdefinierte Format (-Fc), damit pg_restore einzelne Tabellen
zurückholen kann.

## Wiederherstellung

Zum Wiederherstellen wird zuerst eine leere Datenbank angelegt.
Dann spielt pg_restore die Sicherung mit vier parallelen Jobs ein.
Die Wiederherstellung wurde im März zuletzt geprobt und dauerte elf Minuten.
""",
        ["Datensicherung", "pg_dump", "pg_restore", "Wiederherstellung", "Cronjob"],
    ),
    "notizen/technik/heimnetz.md": (
        """# Heimnetz

Der Router steht im Flur und verteilt das WLAN über zwei Repeater.
Das Gästenetz ist vom Hauptnetz getrennt.

## Geräte

Drucker, NAS und Fernseher hängen per Kabel am Switch im Arbeitszimmer.
Die Thermostate funken über eine Zigbee-Bridge.

## Zugang von außen

Von außen ist nur das NAS über ein VPN erreichbar; Portfreigaben gibt es keine.
""",
        ["Router", "WLAN", "Repeater", "Gästenetz", "VPN", "Zigbee"],
    ),
    "rezepte/sauerteigbrot.md": (
        """# Roggenmischbrot mit Sauerteig

Ein kräftiges Brot mit 60 Prozent Roggenmehl, das drei Tage frisch bleibt.

## Zutaten

- 500 g Roggenmehl Type 1150
- 300 g Weizenmehl Type 1050
- 150 g Anstellgut
- 550 ml lauwarmes Wasser
- 18 g Salz

## Zubereitung

Am Vorabend das Anstellgut mit 300 g Roggenmehl und 300 ml Wasser verrühren.
Zwölf Stunden bei Raumtemperatur reifen lassen.
Am nächsten Tag alle Zutaten zu einem Teig kneten und eine Stunde gehen lassen.
Den Laib formen und im Gärkörbchen noch einmal eine Stunde gehen lassen.
Bei 250 Grad anbacken, nach zehn Minuten auf 200 Grad zurückschalten.
Insgesamt etwa 55 Minuten backen, bis das Brot hohl klingt.
""",
        ["Sauerteig", "Roggenmehl", "Anstellgut", "Brot", "Backen"],
    ),
    "rezepte/linsensuppe.md": (
        """# Linsensuppe wie bei Oma

Eine einfache Suppe aus Tellerlinsen, Suppengemüse und Kartoffeln.

## Zubereitung

Zwiebeln und Speck anbraten, Suppengemüse dazugeben.
Die Linsen mit zwei Litern Brühe etwa vierzig Minuten köcheln lassen.
Zum Schluss die Kartoffeln weich kochen und mit einem Schuss Essig abschmecken.
""",
        ["Linsen", "Suppe", "Suppengemüse", "Essig", "Kartoffeln"],
    ),
    "toepfern/brennen.md": (
        """# Brennen im Elektroofen

Notizen zum Brennen von Steinzeug im eigenen Elektroofen.

## Schrühbrand

Der erste Brand ist der Schrühbrand bei 950 Grad.
Danach ist der Scherben fest, aber noch porös und nimmt die Glasur gut an.
Langsam aufheizen: bis 600 Grad höchstens 100 Grad pro Stunde, sonst platzt die Ware.

## Glasurbrand

Der Glasurbrand geht bis 1240 Grad.
Die Brennkurve hält am Ende zwanzig Minuten die Temperatur.
Ein Segerkegel im Sichtfenster zeigt, ob die Temperatur wirklich erreicht wurde.
""",
        ["Schrühbrand", "Glasurbrand", "Brennkurve", "Steinzeug", "Segerkegel", "Elektroofen"],
    ),
    "archive/konzept-bewaesserung.md": (
        """# Konzept: automatische Gartenbewässerung

Status: verworfen, abgelöst durch die Regentonne.

## Idee

Ein Feuchtesensor im Beet schaltet ein Magnetventil.
Der Tropfschlauch verteilt das Wasser direkt an den Wurzeln.

## Warum verworfen

Das Ventil fror im ersten Winter ein, und der Sensor maß im Lehmboden Unsinn.
""",
        ["Gartenbewässerung", "Feuchtesensor", "Tropfschlauch", "Magnetventil", "Beet"],
    ),
    "plan.md": (
        """# Umzugsplan

Der Umzug in die neue Wohnung ist am 14. Juni.

## 1. Termine

Übergabe der alten Wohnung am 30. Juni um 10 Uhr.

## 2. Kisten

Vierzig Kisten vom Baumarkt, beschriftet nach Zimmer.

## 3. Ummelden

Innerhalb von zwei Wochen beim Bürgeramt ummelden.
Dafür die Wohnungsgeberbestätigung vom Vermieter mitnehmen.
Danach Bank, Versicherung und Rundfunkbeitrag über die neue Adresse informieren.

## 4. Internet

Den Anschluss drei Wochen vorher beim Anbieter umziehen lassen.
""",
        ["Umzug", "Wohnung", "Ummelden", "Bürgeramt", "Kisten", "Wohnungsgeberbestätigung"],
    ),
}


@dataclass(frozen=True)
class Block:
    ordinal: int
    heading: str
    line_start: int
    line_end: int
    text: str


def write_corpus(root: Path, corpus: dict[str, tuple[str, list[str] | None]] | None = None) -> Path:
    """Write the corpus files below ``root`` and return it."""
    for rel, (text, _keywords) in (corpus or CORPUS).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root


def split_blocks(text: str) -> list[Block]:
    """Markdown headings start blocks; line numbers are 1-based and inclusive."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("#")] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    blocks: list[Block] = []
    for n, start in enumerate(starts):
        end = (starts[n + 1] if n + 1 < len(starts) else len(lines)) - 1
        while end > start and not lines[end].strip():
            end -= 1
        heading = lines[start].lstrip("#").strip() if lines[start].startswith("#") else ""
        body = "\n".join(lines[start : end + 1])
        blocks.append(Block(n + 1, heading, start + 1, end + 1, body))
    return blocks


def extract_keywords(text: str, *, limit: int = 8) -> list[str]:
    """Offline stand-in for the enricher's keywords: capitalised words (German nouns) and
    technical tokens, most frequent first."""
    words = re.findall(r"\b[A-ZÄÖÜ][\wäöüß-]{4,}\b|\b[a-z]+_[a-z_]+\b", text)
    stop = {"Danach", "Dafür", "Diese", "Dieser", "Jeder", "Jede", "Zum", "Status", "Notizen"}
    counts = Counter(w for w in words if w not in stop)
    return [w for w, _ in counts.most_common(limit)]


def summarize(text: str) -> tuple[str, str]:
    """Topic = first heading; summary = first paragraph after it."""
    lines = text.splitlines()
    topic = next((ln.lstrip("#").strip() for ln in lines if ln.startswith("#")), "")
    paragraph: list[str] = []
    for line in lines:
        if line.startswith("#"):
            if paragraph:
                break
            continue
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    return topic, " ".join(paragraph)[:400]


def embedding_text(topic: str, summary: str, keywords: list[str]) -> str:
    return f"{topic}\n{summary}\nStichwörter: {', '.join(keywords)}"


def index_root(
    root: FileRoot, corpus: dict[str, tuple[str, list[str] | None]] | None = None
) -> list[IndexEntry]:
    """Index every file of ``corpus`` (path -> (text, keywords or None)) under ``root``."""
    items = corpus if corpus is not None else CORPUS
    now = timezone.now()
    prepared: list[tuple[str, str, list[str], str, str, list[Block]]] = []
    for rel, (text, keywords) in items.items():
        topic, summary = summarize(text)
        kws = list(keywords) if keywords else extract_keywords(text)
        prepared.append((rel, text, kws, topic, summary, split_blocks(text)))
    vectors = embed([embedding_text(t, s, k) for _, _, k, t, s, _ in prepared])
    block_vectors = embed([b.text for p in prepared for b in p[5]])
    entries: list[IndexEntry] = []
    bi = 0
    for (rel, text, kws, topic, summary, blocks), vector in zip(prepared, vectors, strict=True):
        raw = text.encode("utf-8")
        block_map: list[dict[str, Any]] = [
            {
                "ordinal": b.ordinal,
                "kind": "section",
                "heading": b.heading,
                "line_start": b.line_start,
                "line_end": b.line_end,
            }
            for b in blocks
        ]
        search_text = f"{rel}\n{topic}\n{summary}\n{' '.join(kws)}\n{text}"
        entry, _ = IndexEntry.objects.update_or_create(
            root=root,
            rel_path=rel,
            defaults={
                "format": Path(rel).suffix.lstrip("."),
                "size": len(raw),
                "inhalt_hash": hashlib.sha256(raw).hexdigest(),
                "topic": topic,
                "summary": summary,
                "keywords": kws,
                "line_count": len(text.splitlines()),
                "search_text": search_text,
                "topic_embedding": vector,
                "block_map": block_map,
                "archived": rel.startswith("archive/") or "/archive/" in rel,
                "state": IndexEntry.State.PRESENT,
                "indexed_at": now,
            },
        )
        IndexEntry.objects.filter(pk=entry.pk).update(
            search_vector=SearchVector(Value(search_text), config="german"),
            search_vector_simple=SearchVector(Value(search_text), config="simple"),
        )
        IndexBlock.objects.filter(entry=entry).delete()
        for b in blocks:
            IndexBlock.objects.create(
                entry=entry,
                ordinal=b.ordinal,
                heading=b.heading,
                line_start=b.line_start,
                line_end=b.line_end,
                block_hash=hashlib.sha256(b.text.encode("utf-8")).hexdigest(),
                embedding=block_vectors[bi],
            )
            bi += 1
        entries.append(entry)
    return entries


def load_directory(directory: Path) -> dict[str, tuple[str, list[str] | None]]:
    """Read every visible file of ``directory`` as a corpus (keywords extracted)."""
    out: dict[str, tuple[str, list[str] | None]] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out[rel] = (path.read_text(encoding="utf-8"), None)
    return out


def make_root(
    *,
    user: Any,
    character: Any,
    directory: Path,
    eigentum: str = FileRoot.Eigentum.NUTZER,
    corpus: dict[str, tuple[str, list[str] | None]] | None = None,
) -> FileRoot:
    """Write the corpus into ``directory``, release it as an active root and index it."""
    directory.mkdir(parents=True, exist_ok=True)
    write_corpus(directory, corpus)
    root = FileRoot.objects.create(
        user=user,
        character=character,
        path=str(directory.resolve()),
        eigentum=eigentum,
        state=FileRoot.State.ACTIVE,
    )
    index_root(root, corpus)
    return root
