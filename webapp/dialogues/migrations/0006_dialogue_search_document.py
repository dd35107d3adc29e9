"""Each dialogue's search document: every lexeme of its turns, for one-word searches (see
``webapp.dialogues.search``), with a GIN index, on PostgreSQL.

The column is in the model on every database (SQLite gets a text column that stays empty), but
its filling, its storage and its index are PostgreSQL's; the index lives outside the model
state, like migration 0003's. A document is stored as it is (``STORAGE EXTERNAL``): large ones
move out of line uncompressed, so the rows stay narrow and reading one costs no decompression.
Filling rewrites every dialogue row once: on a big installation, ``VACUUM FULL
dialogues_dialogue`` afterwards gives the space back.
"""

from __future__ import annotations

from django.db import migrations

import webapp.dialogues.models

INDEX_NAME = "dialogue_search_document"


def fill(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor != "postgresql":
        return
    from webapp.dialogues.search import fill_documents

    dialogue = apps.get_model("dialogues", "Dialogue")._meta.db_table
    schema_editor.execute(
        f"ALTER TABLE {dialogue} ALTER COLUMN search_document SET STORAGE EXTERNAL"
    )
    fill_documents(
        dialogue_table=dialogue, turn_table=apps.get_model("dialogues", "Turn")._meta.db_table
    )
    schema_editor.execute(
        f"CREATE INDEX {INDEX_NAME} ON {dialogue} USING gin (search_document)"
    )


def drop_index(apps, schema_editor) -> None:  # type: ignore[no-untyped-def]
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX IF EXISTS {INDEX_NAME}")


class Migration(migrations.Migration):
    dependencies = [("dialogues", "0005_list_indexes")]

    operations = [
        migrations.AddField(
            model_name="dialogue",
            name="search_document",
            field=webapp.dialogues.models.SearchDocumentField(editable=False, null=True),
        ),
        migrations.RunPython(fill, drop_index, elidable=False),
    ]
