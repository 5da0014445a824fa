"""The dense floor measured for the packaged embedding model, stored with its measurement.

Seed 004 v0.7/v0.8: a floor belongs to a model and a corpus. This row is what
`python manage.py calibrate_floor` measured on bench/corpus with bench/retrieval_set.json; run
the command again after changing the model or to calibrate on your own labelled set.
"""

from django.db import migrations

LABEL = "lokal: all-MiniLM-L6-v2 (384)"
NOTE = (
    "Gemessen 2026-11-29 mit lokal: all-MiniLM-L6-v2 (384) auf bench/corpus (22 Dateien, "
    "56 Fragen): Boden = knapp über der besten fremden Frage (0.390); hält 30 von 44 "
    "einschlägigen Paaren dicht, den Rest muss der lexikalische Kanal tragen."
)
DISTRIBUTIONS = {
    "relative_margin": 0.10,
    "einschlaegig": {
        "n": 44,
        "min": 0.131,
        "p25": 0.377,
        "median": 0.445,
        "p75": 0.546,
        "max": 0.695,
    },
    "fremd": {"n": 12, "min": 0.245, "p25": 0.274, "median": 0.315, "p75": 0.343, "max": 0.390},
    "daneben": {"n": 44, "min": 0.075, "p25": 0.301, "median": 0.342, "p75": 0.383, "max": 0.526},
}


def store(apps, schema_editor):
    calibration = apps.get_model("files", "RetrievalCalibration")
    # A calibration already measured on this installation wins over the shipped one.
    calibration.objects.get_or_create(
        embedding_model=LABEL,
        defaults={"dense_floor": 0.40, "note": NOTE, "distributions": DISTRIBUTIONS},
    )


def remove(apps, schema_editor):
    apps.get_model("files", "RetrievalCalibration").objects.filter(
        embedding_model=LABEL, note=NOTE
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("files", "0002_root_requested_dry_run")]
    operations = [migrations.RunPython(store, remove)]
