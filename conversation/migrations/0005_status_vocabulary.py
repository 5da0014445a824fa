"""Turn.status takes the one status vocabulary (conversation.vocabulary.Status): "abgelehnt"
is a step (DESIGN.md "Agents and the confirmation gate"), not a status; turns a files refusal
stored with it carry ``rejected`` now, their step still names the rule."""

from django.db import migrations, models


def abgelehnt_to_rejected(apps, schema_editor):
    Turn = apps.get_model("conversation", "Turn")
    Turn.objects.filter(status="abgelehnt").update(status="rejected")


class Migration(migrations.Migration):
    dependencies = [
        ("conversation", "0004_inspector_fields"),
    ]

    operations = [
        migrations.RunPython(abgelehnt_to_rejected, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="turn",
            name="status",
            field=models.CharField(
                blank=True,
                choices=[
                    ("laufend", "laufend"),
                    ("rueckfrage", "Rückfrage"),
                    ("abgeschlossen", "abgeschlossen"),
                    ("dismissed", "verworfen"),
                    ("rejected", "abgewiesen"),
                    ("fehler", "Fehler"),
                ],
                max_length=16,
            ),
        ),
    ]
