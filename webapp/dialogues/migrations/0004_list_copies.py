"""What the transcript list filters and sorts on, copied onto the dialogue's own row.

The task's position (the default sort's second key, which joined every dialogue to its task)
and three facts about the turns (a leak flag, a changed answer, the kinds of turn: each was a
subquery over the turns per dialogue). ``summary.backfill`` fills them in for the dialogues
already stored, with the function ``dialogues_store`` uses for new ones. The indexes come in
the next migration, once the rows are written (and the foreign-key checks that rewriting rows
queues in this transaction have run).
"""

from __future__ import annotations

from django.db import migrations, models


def backfill(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    from webapp.dialogues.summary import backfill as fill

    fill(
        dialogue_model=apps.get_model("dialogues", "Dialogue"),
        turn_model=apps.get_model("dialogues", "Turn"),
        task_model=apps.get_model("tasks", "Task"),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dialogues", "0003_turn_text_search_index"),
        ("tasks", "0004_generator_source_and_unique_positions"),
    ]

    operations = [
        migrations.AddField(
            model_name="dialogue",
            name="changed_answer",
            field=models.BooleanField(
                default=False,
                help_text="The student's attempts hold at least two distinct non-empty answers.",
            ),
        ),
        migrations.AddField(
            model_name="dialogue",
            name="leaked",
            field=models.BooleanField(
                default=False, help_text="Some teacher turn was flagged as revealing the answer."
            ),
        ),
        migrations.AddField(
            model_name="dialogue",
            name="task_position",
            field=models.PositiveIntegerField(
                default=0,
                help_text="The task's position in its task set (which never changes once run).",
            ),
        ),
        migrations.AddField(
            model_name="dialogue",
            name="turn_kinds",
            field=models.PositiveSmallIntegerField(
                default=0, help_text="The kinds of turn it has, one bit each (summary.KIND_BITS)."
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=False),
    ]
