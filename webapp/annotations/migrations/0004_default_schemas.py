from django.db import migrations

from webapp.annotations.defaults import ensure_default_schemas


def create_defaults(apps, schema_editor):  # type: ignore[no-untyped-def]
    ensure_default_schemas(
        schema_model=apps.get_model("annotations", "LabelSchema"),
        question_model=apps.get_model("annotations", "LabelQuestion"),
    )


class Migration(migrations.Migration):
    dependencies = [("annotations", "0003_labelling")]

    operations = [migrations.RunPython(create_defaults, migrations.RunPython.noop)]
