"""The run's student model's name, copied onto each dialogue: sorting the transcript list by it
joined every dialogue to its run and model (40-60 ms over 100,000 dialogues, with no index to
walk). ``summary.fill_student_names`` fills it in for the dialogues already stored; the index
comes in the next migration, once the rows are written (as for migrations 0004 and 0005)."""

from __future__ import annotations

from django.db import migrations, models


def fill(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    from webapp.dialogues.summary import fill_student_names

    fill_student_names(
        dialogue_model=apps.get_model("dialogues", "Dialogue"),
        run_model=apps.get_model("runs", "Run"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dialogues", "0006_dialogue_search_document"),
        ("runs", "0002_protocol_options_roles_and_recovery"),
    ]

    operations = [
        migrations.AddField(
            model_name="dialogue",
            name="student_name",
            field=models.CharField(
                default="",
                help_text="The run's student model's name, for sorting (renames follow: apps.py).",
                max_length=200,
            ),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
