"""The dense floor is calibrated on the product's own index, on a split the quality figures are
not scored on (files/calibration.py, ``calibrate_floor``, issue 9)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from files import calibration
from files.models import FileRoot, IndexEntry, RetrievalCalibration
from files.search import embedding_model_label
from novaberg.embeddings import embed

BENCH_SET = Path(__file__).resolve().parents[2] / "bench" / "retrieval_set.json"

NOTES = {
    "garten/tomaten.md": "# Tomaten\n\nDie Tomaten im Hochbeet brauchen jeden Morgen Wasser.\n\n"
    "## Ausgeizen\n\nSeitentriebe jede Woche ausbrechen.\n",
    "rezepte/brot.md": "# Sauerteigbrot\n\nRoggenmehl, Anstellgut und Salz; bei 250 Grad "
    "anbacken.\n",
    "technik/backup.md": "# Datensicherung\n\nJede Nacht sichert pg_dump die Datenbank nach "
    "/srv/backup.\n",
    "reisen/norwegen.md": "# Norwegen\n\nMit der Fähre von Kiel nach Oslo, dann weiter mit dem "
    "Zug nach Bergen.\n",
}
QUERIES: list[dict[str, Any]] = [
    {"q": "Wann gieße ich die Tomaten?", "relevant": ["garten/tomaten.md"]},
    {"q": "Bei wie viel Grad backe ich das Brot an?", "relevant": ["rezepte/brot.md"]},
    {"q": "Wie wird die Datenbank gesichert?", "relevant": ["technik/backup.md"]},
    {"q": "Wie komme ich nach Oslo?", "relevant": ["reisen/norwegen.md"]},
    {"q": "Wer hat die Fußball-WM 1954 gewonnen?", "relevant": []},
    {"q": "Wie heißt die Hauptstadt von Australien?", "relevant": []},
]


def write_notes(base: Path) -> Path:
    for rel, text in NOTES.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_text(text, encoding="utf-8")
    return base


def test_split_is_deterministic_stratified_and_disjoint() -> None:
    queries = calibration.load_labelled(BENCH_SET)
    split = calibration.split_labelled(queries)
    shuffled = list(queries)
    random.Random(1).shuffle(shuffled)
    again = calibration.split_labelled(shuffled)
    assert [q.q for q in again.calibration] == [q.q for q in split.calibration]
    assert [q.q for q in again.scoring] == [q.q for q in split.scoring]
    cal, sco = {q.q for q in split.calibration}, {q.q for q in split.scoring}
    assert not cal & sco
    assert cal | sco == {q.q for q in queries}
    for has_relevant in (True, False):
        a = sum(1 for q in split.calibration if bool(q.relevant) == has_relevant)
        b = sum(1 for q in split.scoring if bool(q.relevant) == has_relevant)
        assert a >= 1 and b >= 1 and abs(a - b) <= 1


def test_floor_keeps_every_unrelated_question_out_and_stays_close_above_it() -> None:
    queries = [
        calibration.LabelledQuery("a", ("a.md",)),
        calibration.LabelledQuery("b", ("b.md",)),
        calibration.LabelledQuery("nichts 1", ()),
        calibration.LabelledQuery("nichts 2", ()),
    ]
    scores = [
        {"a.md": 0.61, "b.md": 0.30},
        {"a.md": 0.28, "b.md": 0.36},
        {"a.md": 0.33, "b.md": 0.352},
        {"a.md": 0.31, "b.md": 0.29},
    ]
    result = calibration.calibrate(queries, scores)
    best_unrelated = max(
        max(s.values()) for q, s in zip(queries, scores, strict=True) if not q.relevant
    )
    assert result.floor > best_unrelated
    assert result.floor - best_unrelated <= 0.02
    assert result.relevant_kept == sum(1 for v in result.relevant if v >= result.floor)
    assert 0.0 <= result.relative_margin <= 0.1


def test_a_split_without_unrelated_questions_cannot_give_a_floor() -> None:
    with pytest.raises(calibration.CalibrationError) as err:
        calibration.calibrate([calibration.LabelledQuery("a", ("a.md",))], [{"a.md": 0.5}])
    assert err.value.step == "keine_fremde_frage"


@pytest.mark.django_db
def test_scores_come_from_the_rows_the_watcher_wrote(tmp_path: Path) -> None:
    folder = write_notes(tmp_path / "notizen")
    labelled = [calibration.LabelledQuery(str(q["q"]), tuple(q["relevant"])) for q in QUERIES]
    vectors = embed([q.q for q in labelled])
    with calibration.folder_indexed(folder, username="kalibrierung-test") as indexed:
        assert indexed.counts["new"] == len(NOTES)
        scores = calibration.pair_scores(
            user=indexed.user, character=indexed.character, vectors=vectors
        )
        rows = {
            e.rel_path: np.array(e.topic_embedding)
            for e in IndexEntry.objects.filter(root=indexed.root)
        }
        root_pk = indexed.root.pk
    for vector, row in zip(vectors, scores, strict=True):
        assert set(row) == set(NOTES)
        for path, cosine in row.items():
            assert cosine == pytest.approx(float(np.dot(rows[path], vector)), abs=1e-4)
    # The person of the calibration and every row of it are gone again.
    assert not FileRoot.objects.filter(pk=root_pk).exists()
    assert not get_user_model().objects.filter(username="kalibrierung-test").exists()
    result = calibration.calibrate(labelled, scores)
    assert result.files == len(NOTES)
    assert all(result.floor > best for best in result.unrelated_best)


@pytest.mark.django_db
def test_a_relevant_file_the_index_lacks_fails_with_its_name(tmp_path: Path) -> None:
    folder = write_notes(tmp_path / "notizen")
    labelled = [calibration.LabelledQuery("Wo liegt der Schlüssel?", ("haus/schluessel.md",))]
    with calibration.folder_indexed(folder, username="kalibrierung-test") as indexed:
        scores = calibration.pair_scores(
            user=indexed.user, character=indexed.character, vectors=embed([labelled[0].q])
        )
    with pytest.raises(calibration.CalibrationError) as err:
        calibration.calibrate(labelled, scores)
    assert err.value.step == "datei_fehlt_im_index"
    assert "haus/schluessel.md" in err.value.message


@pytest.mark.django_db
def test_calibrate_floor_stores_the_floor_of_the_calibration_split(tmp_path: Path) -> None:
    folder = write_notes(tmp_path / "notizen")
    set_path = tmp_path / "set.json"
    set_path.write_text(json.dumps({"description": "test", "queries": QUERIES}), encoding="utf-8")
    split = calibration.split_labelled(calibration.load_labelled(set_path))
    with calibration.folder_indexed(folder, username="erwartung") as indexed:
        expected = calibration.calibrate(
            split.calibration,
            calibration.pair_scores(
                user=indexed.user,
                character=indexed.character,
                vectors=embed([q.q for q in split.calibration]),
            ),
        )
    call_command("calibrate_floor", "--set", str(set_path), "--corpus", str(folder))
    row = RetrievalCalibration.objects.get(embedding_model=embedding_model_label())
    assert row.dense_floor == pytest.approx(expected.floor)
    assert row.distributions["split"] == calibration.SPLIT_CALIBRATION
    assert len(row.distributions["unrelated_best"]) == sum(
        1 for q in split.calibration if not q.relevant
    )
    assert "Wächter" in row.note
    assert not get_user_model().objects.filter(username__startswith="kalibrierung-").exists()
