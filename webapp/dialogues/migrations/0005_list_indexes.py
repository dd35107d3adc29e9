"""An index for each sort of the transcript list, and for the filters on the copies.

- Sort indexes: ``models.SORT_INDEXES``, plus the first correct turn's descending order with its
  empty values last (``DESC NULLS LAST``), on PostgreSQL only: SQLite cannot declare it, so it
  lives outside the model state, like the full-text index of migration 0003.
- Indexes for the filters on the copies, and the run + outcome index gains the default sort's
  columns. The single-column index on ``outcome`` goes: ``dialogue_sort_outcome`` starts
  with it.
"""

from __future__ import annotations

from django.db import migrations, models

FIRST_CORRECT_DESC = "dialogue_sort_first_correct_d"


def _first_correct_desc():  # type: ignore[no-untyped-def]
    from django.db.models import F, OrderBy

    # Keep in step with webapp.dialogues.filters.DialogueFilters.ordering for "-first_correct".
    return models.Index(
        OrderBy(F("first_correct_turn"), descending=True, nulls_last=True),
        F("run").desc(),
        F("task").desc(),
        F("sample_index").desc(),
        F("id").desc(),
        name=FIRST_CORRECT_DESC,
    )


def create_first_correct_desc(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("dialogues", "Dialogue"), _first_correct_desc())


def drop_first_correct_desc(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("dialogues", "Dialogue"), _first_correct_desc())


class Migration(migrations.Migration):
    dependencies = [("dialogues", "0004_list_copies")]

    operations = [
        migrations.AlterField(
            model_name="dialogue",
            name="outcome",
            field=models.CharField(
                choices=[("solved", "Solved"), ("unsolved", "Unsolved"), ("error", "Error")],
                max_length=16,
            ),
        ),
        migrations.RemoveIndex(model_name="dialogue", name="dialogues_d_run_id_424436_idx"),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["run", "outcome", "task_position", "task", "sample_index", "id"],
                name="dialogue_run_outcome",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue", index=models.Index(fields=["leaked"], name="dialogue_leaked")
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(fields=["changed_answer"], name="dialogue_changed_answer"),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(fields=["turn_kinds"], name="dialogue_turn_kinds"),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["-run", "task_position", "task", "sample_index", "id"],
                name="dialogue_sort_run_desc",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["run", "task_position", "task", "sample_index", "id"],
                name="dialogue_sort_run",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["task_position", "task", "run", "sample_index", "id"],
                name="dialogue_sort_task",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["outcome", "run", "task", "sample_index", "id"],
                name="dialogue_sort_outcome",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["first_correct_turn", "run", "task", "sample_index", "id"],
                name="dialogue_sort_first_correct",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["num_turns", "run", "task", "sample_index", "id"],
                name="dialogue_sort_turns",
            ),
        ),
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(fields=["created_at", "id"], name="dialogue_sort_created"),
        ),
        migrations.RunPython(
            create_first_correct_desc, drop_first_correct_desc, elidable=False
        ),
    ]
