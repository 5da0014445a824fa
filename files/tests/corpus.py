"""A small German corpus for the retrieval tests, indexed by the product's own indexing path.

``index_root`` parses each file with the watcher's parser for its format and hands it to
``files.indexing.index_entries_refresh`` — the service the watcher and the benchmarks call — so
the retrieval tests search exactly the rows (topic, summary, keywords with the headings, block
rows with text and search vectors, embeddings) a person's index holds.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from django.contrib.auth.models import User

from conversation.models import Character
from files.indexing import FileToIndex, RefreshStatus, index_entries_refresh
from files.models import FileRoot, IndexEntry
from files.watcher.parsers import parser_for_name

# Path -> text. (An older form, path -> (text, keywords), is still accepted; the keywords are
# ignored: the enrichment extracts them, as in a person's index.)
Corpus = Mapping[str, str | tuple[str, list[str] | None]]

CORPUS: dict[str, str] = {
    "notizen/technik/postgres-backup.md": """# Datensicherung der PostgreSQL-Datenbank

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
    "notizen/technik/heimnetz.md": """# Heimnetz

Der Router steht im Flur und verteilt das WLAN über zwei Repeater.
Das Gästenetz ist vom Hauptnetz getrennt.

## Geräte

Drucker, NAS und Fernseher hängen per Kabel am Switch im Arbeitszimmer.
Die Thermostate funken über eine Zigbee-Bridge.

## Zugang von außen

Von außen ist nur das NAS über ein VPN erreichbar; Portfreigaben gibt es keine.
""",
    "rezepte/sauerteigbrot.md": """# Roggenmischbrot mit Sauerteig

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
    "rezepte/linsensuppe.md": """# Linsensuppe wie bei Oma

Eine einfache Suppe aus Tellerlinsen, Suppengemüse und Kartoffeln.

## Zubereitung

Zwiebeln und Speck anbraten, Suppengemüse dazugeben.
Die Linsen mit zwei Litern Brühe etwa vierzig Minuten köcheln lassen.
Zum Schluss die Kartoffeln weich kochen und mit einem Schuss Essig abschmecken.
""",
    "toepfern/brennen.md": """# Brennen im Elektroofen

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
    "archive/konzept-bewaesserung.md": """# Konzept: automatische Gartenbewässerung

Status: verworfen, abgelöst durch die Regentonne.

## Idee

Ein Feuchtesensor im Beet schaltet ein Magnetventil.
Der Tropfschlauch verteilt das Wasser direkt an den Wurzeln.

## Warum verworfen

Das Ventil fror im ersten Winter ein, und der Sensor maß im Lehmboden Unsinn.
""",
    "plan.md": """# Umzugsplan

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
}


def _text(value: str | tuple[str, list[str] | None]) -> str:
    return value if isinstance(value, str) else value[0]


def write_corpus(root: Path, corpus: Corpus | None = None) -> Path:
    """Write the corpus files below ``root`` and return it."""
    for rel, value in (corpus or CORPUS).items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_text(value), encoding="utf-8")
    return root


def index_root(root: FileRoot, corpus: Corpus | None = None) -> list[IndexEntry]:
    """Index the files of ``corpus`` (already written below ``root.path``) through the
    product's indexing service; one batch, so the embeddings are computed in one call."""
    items: list[FileToIndex] = []
    for rel in corpus if corpus is not None else CORPUS:
        path = Path(root.path) / rel
        data = path.read_bytes()
        parser = parser_for_name(path.name)
        if parser is None:
            raise ValueError(f"no parser for {rel}")
        st = os.stat(path)
        items.append(
            FileToIndex(
                root=root,
                rel_path=rel,
                format=parser.format,
                digest=hashlib.sha256(data).hexdigest(),
                text=parser.parse(data).text,
                size=st.st_size,
                mtime_ns=st.st_mtime_ns,
                ctime_ns=st.st_ctime_ns,
                inode=st.st_ino,
            )
        )
    results = index_entries_refresh(items=items)
    failed = [r for r in results if r.status == RefreshStatus.FAILED]
    if failed:
        raise RuntimeError(f"indexing failed: {failed}")
    ids = [r.entry_id for r in results]
    by_id = IndexEntry.objects.in_bulk(ids)
    return [by_id[i] for i in ids if i is not None]


def load_directory(directory: Path) -> dict[str, str]:
    """Read every visible file of ``directory`` as a corpus."""
    out: dict[str, str] = {}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_file() and not any(part.startswith(".") for part in rel.split("/")):
            out[rel] = path.read_text(encoding="utf-8")
    return out


def make_root(
    *,
    user: User,
    character: Character,
    directory: Path,
    eigentum: str = FileRoot.Eigentum.NUTZER,
    corpus: Corpus | None = None,
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
