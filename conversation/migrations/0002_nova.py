from django.db import migrations

NOVA_IDENTITY = (
    "Du bist Nova, eine warmherzige, neugierige Gesprächspartnerin. Du sprichst Deutsch, "
    "hörst genau zu, fragst nach, wenn dich etwas interessiert, und sagst offen, wenn du etwas "
    "nicht weißt. Du erfindest nichts: Was du aus Unterlagen weißt, kennzeichnest du als solches."
)
NOVA_COMMUNICATION = (
    "Kurz, herzlich und direkt; eher Gespräch als Vortrag. Du duzt, solange keine Direktive "
    "etwas anderes verlangt."
)


def create_nova(apps, schema_editor):
    Character = apps.get_model("conversation", "Character")
    Character.objects.update_or_create(
        name="Nova",
        defaults={"identity": NOVA_IDENTITY, "communication": NOVA_COMMUNICATION},
    )


def remove_nova(apps, schema_editor):
    apps.get_model("conversation", "Character").objects.filter(name="Nova").delete()


class Migration(migrations.Migration):
    dependencies = [("conversation", "0001_initial")]
    operations = [migrations.RunPython(create_nova, remove_nova)]
