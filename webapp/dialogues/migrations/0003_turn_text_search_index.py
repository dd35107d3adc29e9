"""A GIN index for full-text search over turn text, on PostgreSQL only.

The expression is the one ``search.turn_search_vector`` filters on, so the planner uses the
index. SQLite has no such index type; there the transcript search falls back to ``icontains``
and this migration does nothing. The index lives outside the model state (``Turn.Meta`` cannot
declare a vendor-specific index), so ``makemigrations`` never tries to drop or recreate it.
"""

from __future__ import annotations

from django.db import migrations

INDEX_NAME = "dialogues_turn_text_search"


def _index():  # type: ignore[no-untyped-def]
    from django.contrib.postgres.indexes import GinIndex
    from django.contrib.postgres.search import SearchVector

    # Keep in step with webapp.dialogues.search.turn_search_vector.
    return GinIndex(SearchVector("text", config="english"), name=INDEX_NAME)


def create_index(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("dialogues", "Turn"), _index())


def drop_index(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("dialogues", "Turn"), _index())


class Migration(migrations.Migration):
    dependencies = [("dialogues", "0002_initial")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]
