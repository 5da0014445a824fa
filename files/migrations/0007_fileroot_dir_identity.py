"""The released directory's identity (device, inode) on each root (issue 27, swap race).

Roots released before this have none; the first check that still passes the boundary records
it from a descriptor opened without following any link (files.boundary.root_open). Their next
watcher run is a full-hash run: rows stored before this change were read by path, and a file
reached through a swapped link could have been stored then; the fast path must not keep it.
"""

from django.db import migrations, models


def full_hash_next(apps, schema_editor):
    FileRoot = apps.get_model("files", "FileRoot")
    FileRoot.objects.update(last_full_hash_at=None)


class Migration(migrations.Migration):
    dependencies = [("files", "0006_calibration_minilm_onnx")]

    operations = [
        migrations.AddField(
            model_name="fileroot",
            name="dir_device",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="fileroot",
            name="dir_inode",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(full_hash_next, migrations.RunPython.noop),
    ]
