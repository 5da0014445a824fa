"""Calibrating the dense floor on an index built by the product (seed 004 v0.7/v0.8).

A floor belongs to an embedding model, a runtime AND to the text the indexer embeds: a floor
measured on vectors of another embedding text (e.g. a test stand-in's) is a floor for another
space. So everything here reads the cosines the product's own dense channel computes over rows
the product's own watcher wrote (``files.watcher.run.index_root_run`` on a real folder).

The labelled set is split deterministically into a calibration split and a scoring split
(DESIGN.md "Files": the floor is calibrated on a split the quality figures are not scored on).

Used by ``python manage.py calibrate_floor`` and by ``bench/bench_retrieval.py``.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.test.utils import override_settings

from conversation.models import Character
from files.models import FileRoot, IndexBlock, IndexEntry

if TYPE_CHECKING:
    from django.contrib.auth.models import User

SPLIT_CALIBRATION = "kalibrierung"
SPLIT_SCORING = "bewertung"


def index_path() -> str:
    """The index path every figure of this module is measured on (named in the bench tables)."""
    from files.watcher import run

    if hasattr(run, "index_entries_refresh"):
        return (
            "files.watcher.run.index_root_run → files.indexing.index_entries_refresh "
            "(Wächter, Offline-Anreicherung)"
        )
    return "files.watcher.run.index_root_run (Wächter, Offline-Anreicherung)"


class CalibrationError(Exception):
    """A calibration that cannot be measured; ``step`` names why, the message is German."""

    def __init__(self, step: str, message: str) -> None:
        super().__init__(message)
        self.step = step
        self.message = message


@dataclass(frozen=True)
class LabelledQuery:
    q: str
    relevant: tuple[str, ...]


@dataclass(frozen=True)
class Split:
    calibration: list[LabelledQuery]
    scoring: list[LabelledQuery]

    def describe(self) -> str:
        def count(qs: list[LabelledQuery]) -> str:
            none = sum(1 for q in qs if not q.relevant)
            return f"{len(qs)} Fragen ({none} ohne einschlägige Datei)"

        return (
            f"Kalibrierung: {count(self.calibration)}; Bewertung: {count(self.scoring)} "
            "(geschichtet nach mit/ohne einschlägige Datei, je Schicht nach sha256 der Frage "
            "sortiert und abwechselnd verteilt)"
        )


@dataclass
class Calibration:
    floor: float
    relative_margin: float
    queries: int
    files: int
    relevant: list[float] = field(default_factory=list)
    unrelated_best: list[float] = field(default_factory=list)
    off_target_best: list[float] = field(default_factory=list)

    @property
    def relevant_kept(self) -> int:
        return sum(1 for s in self.relevant if s >= self.floor)

    def distributions(self) -> dict[str, Any]:
        return {
            "relative_margin": self.relative_margin,
            "relevant": [round(v, 4) for v in self.relevant],
            "unrelated_best": [round(v, 4) for v in self.unrelated_best],
            "off_target_best": [round(v, 4) for v in self.off_target_best],
        }


def load_labelled(path: Path) -> list[LabelledQuery]:
    """``{"queries": [{"q": str, "relevant": [rel_path, ...]}, ...]}``; loud on another shape."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = data["queries"]
        out = [LabelledQuery(str(i["q"]), tuple(str(p) for p in i["relevant"])) for i in items]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CalibrationError(
            "satz_unlesbar", f"Der Fragensatz {path} ist nicht lesbar: {exc}"
        ) from exc
    if not out:
        raise CalibrationError("satz_leer", f"Der Fragensatz {path} enthält keine Fragen.")
    return out


def _order_key(q: LabelledQuery) -> str:
    return hashlib.sha256(q.q.encode("utf-8")).hexdigest()


def split_labelled(queries: list[LabelledQuery]) -> Split:
    """Deterministic, stratified: questions with and without a relevant file are each sorted by
    the sha256 of their text and dealt alternately (first to calibration). The input order does
    not matter, and both splits get questions that must find nothing."""
    calibration: list[LabelledQuery] = []
    scoring: list[LabelledQuery] = []
    for stratum in (
        [q for q in queries if q.relevant],
        [q for q in queries if not q.relevant],
    ):
        for n, q in enumerate(sorted(stratum, key=_order_key)):
            (calibration if n % 2 == 0 else scoring).append(q)
    return Split(calibration, scoring)


def pair_scores(
    *,
    user: User,
    character: Character,
    vectors: list[list[float]],
    blocks: bool = False,
) -> list[dict[str, float]]:
    """Per query vector: rel_path -> cosine for EVERY present row of the pair's active roots, as
    the product's dense channel computes it. ``blocks``: the block channel's cosines instead
    (the best block of each file), for the block floor."""
    from files import search

    root_ids = search.active_root_ids(user=user, character=character)
    rows = dict(
        IndexEntry.objects.filter(root_id__in=root_ids, state=IndexEntry.State.PRESENT)
        .exclude(topic_embedding=None)
        .values_list("id", "rel_path")
    )
    if not rows:
        raise CalibrationError("index_leer", "Das Paar hat keine eingebetteten Indexzeilen.")
    channel: Callable[..., tuple[list[Any], dict[str, Any]]] = search.dense_channel
    limit = len(rows)
    if blocks:
        block_channel = getattr(search, "block_dense_channel", None)
        if block_channel is None:
            raise CalibrationError("keine_bloecke", "Die Suche hat keinen Block-Kanal.")
        channel = block_channel
        limit = IndexBlock.objects.filter(entry_id__in=rows).exclude(embedding=None).count()
    if limit > settings.FILES_EXACT_SCAN_MAX_ROWS:
        # Above the switch point the dense channel is approximate (HNSW): not a calibration.
        raise CalibrationError(
            "zu_viele_zeilen",
            f"{limit} Zeilen sind mehr als die exakte Suche abdeckt "
            f"({settings.FILES_EXACT_SCAN_MAX_ROWS}); kalibriert wird auf einem kleinen Satz.",
        )
    out: list[dict[str, float]] = []
    for vector in vectors:
        found, _info = channel(root_ids=root_ids, query_vector=vector, limit=max(1, limit))
        scores: dict[str, float] = {}
        for hit in found:
            # (entry_id, cosine) for files, (entry_id, ordinal, cosine) for blocks.
            path, cosine = rows.get(int(hit[0])), float(hit[-1])
            if path is not None and cosine > scores.get(path, -2.0):
                scores[path] = cosine
        out.append(scores)
    return out


def calibrate(queries: list[LabelledQuery], scores: list[dict[str, float]]) -> Calibration:
    """The floor: just above the best score any question WITHOUT a relevant file reached
    (rounded up to the next 0.01 after a 0.005 gap). The relative margin: 0.8 × the smallest
    distance of a kept relevant hit above the mean score of the question, within [0, 0.1]."""
    if len(queries) != len(scores):
        raise CalibrationError("laenge", "Fragen und Trefferlisten passen nicht zusammen.")
    relevant: list[float] = []
    margins: list[float] = []
    unrelated_best: list[float] = []
    off_target_best: list[float] = []
    files: set[str] = set()
    for q, row in zip(queries, scores, strict=True):
        files.update(row)
        if not row:
            raise CalibrationError("keine_werte", f"Für „{q.q}“ gab die Suche keine Werte.")
        mean = statistics.fmean(row.values())
        missing = [p for p in q.relevant if p not in row]
        if missing:
            raise CalibrationError(
                "datei_fehlt_im_index",
                f"Die einschlägige Datei {', '.join(missing)} zu „{q.q}“ steht nicht im Index.",
            )
        if q.relevant:
            relevant.extend(row[p] for p in q.relevant)
            margins.extend(row[p] - mean for p in q.relevant)
            others = [v for p, v in row.items() if p not in q.relevant]
            if others:
                off_target_best.append(max(others))
        else:
            unrelated_best.append(max(row.values()))
    if not unrelated_best:
        raise CalibrationError(
            "keine_fremde_frage",
            "Der Kalibrierungsteil enthält keine Frage ohne einschlägige Datei; "
            "ohne sie lässt sich kein Boden messen.",
        )
    floor = round(math.ceil((max(unrelated_best) + 0.005) * 100) / 100, 2)
    kept = [m for s, m in zip(relevant, margins, strict=True) if s >= floor]
    margin = round(max(0.0, min(0.1, (min(kept) if kept else 0.0) * 0.8)), 3)
    return Calibration(
        floor=floor,
        relative_margin=margin,
        queries=len(queries),
        files=len(files),
        relevant=relevant,
        unrelated_best=unrelated_best,
        off_target_best=off_target_best,
    )


@dataclass
class IndexedFolder:
    user: User
    character: Character
    root: FileRoot
    outcome: str
    counts: dict[str, Any]


@contextmanager
def folder_indexed(
    directory: Path, *, username: str, keep: bool = False
) -> Iterator[IndexedFolder]:
    """Release ``directory`` for a person of its own (created, active root) and index it with
    the product's watcher run; on exit the person and every row go again (unless ``keep``).

    The boundary is widened to exactly this folder for the run: the watcher checks the boundary
    at every run, and a calibration corpus need not lie inside the configured one.
    """
    from conversation.services import character_default
    from files.watcher.run import index_root_run

    resolved = directory.resolve()
    if not resolved.is_dir():
        raise CalibrationError("korpus_fehlt", f"Das Verzeichnis {resolved} gibt es nicht.")
    user_model = get_user_model()
    user_model.objects.filter(username=username).delete()
    user = user_model.objects.create(username=username)
    user.set_unusable_password()
    user.save(update_fields=["password"])
    character = character_default()
    try:
        with override_settings(FILES_BOUNDARY=[*settings.FILES_BOUNDARY, str(resolved)]):
            root = FileRoot.objects.create(
                user=user,
                character=character,
                path=str(resolved),
                eigentum=FileRoot.Eigentum.NUTZER,
                state=FileRoot.State.ACTIVE,
            )
            report = index_root_run(root_id=root.pk, full_hash=True)
            if report.outcome != "fertig" or report.counts.get("errors"):
                raise CalibrationError(
                    "indexlauf",
                    f"Der Indexlauf über {resolved} endete mit {report.outcome} ({report.counts}).",
                )
            yield IndexedFolder(user, character, root, report.outcome, report.counts)
    finally:
        if not keep:
            user_model.objects.filter(pk=user.pk).delete()
