"""Calibrate the dense floor for the active embedding model (seed 004 v0.7/v0.8).

Indexes the labelled set's corpus (bench/corpus/) with the product's own watcher run for a
person of its own (removed again afterwards), reads the cosines the product's dense channel
computes for the questions of the CALIBRATION split of bench/retrieval_set.json
(``files.calibration.split_labelled``; the other split is what the bench scores quality on),
prints the relevant / unrelated distributions and proposes the floor: just above the best score
any question WITHOUT a relevant file reached. Stores it with its measurement note in
RetrievalCalibration (unless --dry-run). ``--split alle`` calibrates on every question.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from files import calibration

BENCH = Path(settings.BASE_DIR) / "bench"


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
        parser.add_argument(
            "--split",
            choices=[calibration.SPLIT_CALIBRATION, "alle"],
            default=calibration.SPLIT_CALIBRATION,
        )
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        from django.utils import timezone

        from files.models import RetrievalCalibration
        from files.search import embedding_model_label
        from novaberg.embeddings import embed

        try:
            labelled = calibration.load_labelled(Path(options["set"]))
            split = calibration.split_labelled(labelled)
            queries = labelled if options["split"] == "alle" else split.calibration
            with calibration.folder_indexed(
                Path(options["corpus"]), username=f"kalibrierung-{os.getpid()}"
            ) as indexed:
                vectors = embed([q.q for q in queries])
                scores = calibration.pair_scores(
                    user=indexed.user, character=indexed.character, vectors=vectors
                )
                try:
                    block_scores = calibration.pair_scores(
                        user=indexed.user, character=indexed.character, vectors=vectors, blocks=True
                    )
                    block: calibration.Calibration | None = calibration.calibrate(
                        queries, block_scores
                    )
                except calibration.CalibrationError as exc:
                    self.stdout.write(f"Blockboden nicht gemessen ({exc.step}): {exc.message}")
                    block = None
            result = calibration.calibrate(queries, scores)
        except calibration.CalibrationError as exc:
            raise CommandError(f"fehler ({exc.step}): {exc.message}") from exc
        label = embedding_model_label()
        self.stdout.write(f"Modell: {label}; {result.files} Dateien, {result.queries} Fragen")
        self.stdout.write(f"Index: {calibration.index_path()}")
        self.stdout.write(
            f"Teil: {options['split']} — {split.describe()}"
            if options["split"] != "alle"
            else "Teil: alle Fragen"
        )
        self.stdout.write(f"einschlägig (Frage × richtige Datei): {_dist(result.relevant)}")
        self.stdout.write(
            f"fremd (beste Datei, Frage ohne Treffer): {_dist(result.unrelated_best)}"
        )
        self.stdout.write(
            f"daneben (beste falsche Datei je Frage): {_dist(result.off_target_best)}"
        )
        note = (
            f"Gemessen {timezone.now():%Y-%m-%d} mit {label} auf {options['corpus']} "
            f"({result.files} Dateien, {result.queries} Fragen, Teil {options['split']}, "
            f"Index über den Wächter): Boden = knapp über der besten fremden Frage "
            f"({max(result.unrelated_best):.3f}); hält {result.relevant_kept} von "
            f"{len(result.relevant)} einschlägigen Paaren dicht, den Rest muss der lexikalische "
            "Kanal tragen."
        )
        self.stdout.write(
            f"Vorschlag: Boden {result.floor:.2f}, relativer Abstand {result.relative_margin:.3f}"
        )
        distributions: dict[str, Any] = {**result.distributions(), "split": options["split"]}
        if block is not None:
            # Only the block floor: the block margin keeps its documented value in files.search.
            distributions["block_floor"] = block.floor
            distributions["block_unrelated_best"] = [round(v, 4) for v in block.unrelated_best]
            note += (
                f" Blockboden {block.floor:.2f} (beste fremde Frage "
                f"{max(block.unrelated_best):.3f}; hält {block.relevant_kept} von "
                f"{len(block.relevant)})."
            )
            self.stdout.write(f"Blöcke, fremd (bester Block): {_dist(block.unrelated_best)}")
            self.stdout.write(f"Vorschlag Blockboden: {block.floor:.2f}")
        self.stdout.write(note)
        if options["dry_run"]:
            return
        row, _ = RetrievalCalibration.objects.update_or_create(
            embedding_model=label,
            defaults={
                "dense_floor": result.floor,
                "note": note,
                "distributions": distributions,
                "measured_at": timezone.now(),
            },
        )
        stored = RetrievalCalibration.objects.get(pk=row.pk)  # verify the write by reading back
        if abs(stored.dense_floor - result.floor) > 1e-9:
            raise CommandError(
                "fehler (nicht_gespeichert): Die Kalibrierung wurde nicht gespeichert."
            )
        self.stdout.write(f"gespeichert: {stored}")
