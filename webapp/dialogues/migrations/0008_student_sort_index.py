"""The index for sorting the transcript list by student model (see migration 0007)."""

from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("dialogues", "0007_student_name_copy")]

    operations = [
        migrations.AddIndex(
            model_name="dialogue",
            index=models.Index(
                fields=["student_name", "run", "task", "sample_index", "id"],
                name="dialogue_sort_student",
            ),
        ),
    ]
