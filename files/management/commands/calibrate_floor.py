"""Calibrate the dense floor for the active embedding model (seed 004 v0.7/v0.8).

Embeds the labelled set (bench/retrieval_set.json) and its corpus (bench/corpus/), prints the
relevant / unrelated cosine distributions and proposes the floor: just above the best score any
question WITHOUT a relevant file reached. Stores it with its measurement note in
RetrievalCalibration (unless --dry-run). Also proposes the relative margin (how far a relevant
hit stands above the mean score of all files for the same question).

Shortcut, said plainly: the corpus files are enriched here by the same offline stand-in the
tests use (files/tests/corpus.py: topic = heading, summary = first paragraph, keywords =
capitalised terms), not by the watcher's enricher.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

BENCH = Path(settings.BASE_DIR) / "bench"


def measure(set_path: Path, corpus_dir: Path) -> dict[str, Any]:
    import numpy as np

    from files.tests.corpus import embedding_text, extract_keywords, load_directory, summarize
    from novaberg.embeddings import embed

    corpus = load_directory(corpus_dir)
    paths = list(corpus)
    texts = []
    for text, _ in corpus.values():
        topic, summary = summarize(text)
        texts.append(embedding_text(topic, summary, extract_keywords(text)))
    docs = np.array(embed(texts))
    labelled = json.loads(set_path.read_text())["queries"]
    queries = np.array(embed([q["q"] for q in labelled]))
    scores = queries @ docs.T
    relevant: list[float] = []
    unrelated_best: list[float] = []
    off_target_best: list[float] = []
    margins: list[float] = []
    for q, row in zip(labelled, scores, strict=True):
        rel = [paths.index(p) for p in q["relevant"]]
        if rel:
            relevant.extend(float(row[i]) for i in rel)
            margins.extend(float(row[i] - row.mean()) for i in rel)
            others = [float(row[i]) for i in range(len(paths)) if i not in rel]
            off_target_best.append(max(others))
        else:
            unrelated_best.append(float(row.max()))
    floor = round(float(np.ceil((max(unrelated_best) + 0.005) * 100) / 100), 2)
    kept = [m for s, m in zip(relevant, margins, strict=True) if s >= floor]
    margin = round(max(0.0, min(0.1, (min(kept) if kept else 0.0) * 0.8)), 3)
    return {
        "files": len(paths),
        "queries": len(labelled),
        "relevant": relevant,
        "unrelated_best": unrelated_best,
        "off_target_best": off_target_best,
        "floor": floor,
        "relative_margin": margin,
        "relevant_kept": sum(1 for s in relevant if s >= floor),
    }


def _dist(values: list[float]) -> str:
    if not values:
        return "—"
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return (
        f"n={len(values)} min={min(values):.3f} p25={q[0]:.3f} median={q[1]:.3f} "
        f"p75={q[2]:.3f} max={max(values):.3f}"
    )


class Command(BaseCommand):
    help = "Measure the dense floor on the labelled set and store it for the embedding model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--set", default=str(BENCH / "retrieval_set.json"))
        parser.add_argument("--corpus", default=str(BENCH / "corpus"))
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        from django.utils import timezone

        from files.models import RetrievalCalibration
        from files.search import embedding_model_label

        result = measure(Path(options["set"]), Path(options["corpus"]))
        label = embedding_model_label()
        self.stdout.write(f"Modell: {label}; {result['files']} Dateien, {result['queries']} Fragen")
        self.stdout.write(f"einschlägig (Frage × richtige Datei): {_dist(result['relevant'])}")
        self.stdout.write(
            f"fremd (beste Datei, Frage ohne Treffer): {_dist(result['unrelated_best'])}"
        )
        self.stdout.write(
            f"daneben (beste falsche Datei je Frage): {_dist(result['off_target_best'])}"
        )
        note = (
            f"Gemessen {timezone.now():%Y-%m-%d} mit {label} auf bench/corpus "
            f"({result['files']} Dateien, {result['queries']} Fragen): Boden = knapp über der "
            f"besten fremden Frage ({max(result['unrelated_best']):.3f}); hält "
            f"{result['relevant_kept']} von {len(result['relevant'])} einschlägigen Paaren "
            f"dicht, den Rest muss der lexikalische Kanal tragen."
        )
        self.stdout.write(
            f"Vorschlag: Boden {result['floor']:.2f}, relativer Abstand "
            f"{result['relative_margin']:.3f}"
        )
        self.stdout.write(note)
        if options["dry_run"]:
            return
        row, _ = RetrievalCalibration.objects.update_or_create(
            embedding_model=label,
            defaults={
                "dense_floor": result["floor"],
                "note": note,
                "distributions": {
                    "relative_margin": result["relative_margin"],
                    "relevant": [round(v, 4) for v in result["relevant"]],
                    "unrelated_best": [round(v, 4) for v in result["unrelated_best"]],
                    "off_target_best": [round(v, 4) for v in result["off_target_best"]],
                },
                "measured_at": timezone.now(),
            },
        )
        stored = RetrievalCalibration.objects.get(pk=row.pk)  # verify the write by reading back
        if abs(stored.dense_floor - result["floor"]) > 1e-9:
            raise RuntimeError("calibration was not stored")
        self.stdout.write(f"gespeichert: {stored}")
