"""The dense floor measured for the packaged model on ONNX Runtime (int8), with its measurement.

A floor belongs to a model AND its runtime (DESIGN.md "Files"): the int8 export's cosines are
not PyTorch's (worst agreement 0.994 on the labelled questions), so it gets its own row under
its own label. Measured by bench/bench_embeddings.py (the calibration split of
bench/retrieval_set.json over bench/corpus/, indexed by the watcher with this runtime); run
`NOVABERG_EMBEDDINGS=local python manage.py calibrate_floor` to measure it on your own set.
"""

from django.db import migrations

LABEL = "lokal: all-MiniLM-L6-v2, ONNX int8 (384)"
NOTE = (
    "Gemessen 2026-12-02 mit lokal: all-MiniLM-L6-v2, ONNX int8 (384) auf bench/corpus "
    "(22 Dateien, Kalibrierungsteil: 28 Fragen, Index über den Wächter): Boden = knapp über der "
    "besten fremden Frage (0.381); hält 16 von 22 einschlägigen Paaren dicht, den Rest muss der "
    "lexikalische Kanal tragen. Blockboden 0.49 (beste fremde Frage 0.483). Im selben Lauf "
    "PyTorch: Boden 0.38 (0.370)."
)
DISTRIBUTIONS = {
    "relative_margin": 0.10,
    "block_floor": 0.49,
    "split": "kalibrierung",
    "einschlaegig": {
        "n": 22,
        "min": 0.12,
        "p25": 0.376,
        "median": 0.442,
        "p75": 0.496,
        "max": 0.741,
    },
    "fremd": {"n": 6, "min": 0.303, "p25": 0.306, "median": 0.315, "p75": 0.368, "max": 0.381},
    "daneben": {"n": 22, "min": 0.084, "p25": 0.348, "median": 0.372, "p75": 0.393, "max": 0.499},
    "block_fremd": {"n": 6, "min": 0.35, "p25": 0.36, "median": 0.415, "p75": 0.465, "max": 0.483},
}


def store(apps, schema_editor):
    calibration = apps.get_model("files", "RetrievalCalibration")
    # A calibration already measured on this installation wins over the shipped one.
    calibration.objects.get_or_create(
        embedding_model=LABEL,
        defaults={"dense_floor": 0.39, "note": NOTE, "distributions": DISTRIBUTIONS},
    )


def remove(apps, schema_editor):
    apps.get_model("files", "RetrievalCalibration").objects.filter(
        embedding_model=LABEL, note=NOTE
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("files", "0005_german_model_names")]
    operations = [migrations.RunPython(store, remove)]
