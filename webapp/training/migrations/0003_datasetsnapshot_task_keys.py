"""Each dataset snapshot records the tasks of its dialogues (by task key: a hash of the prompt
and the reference), so that an evaluation that shares tasks with a model's training data is
caught at launch and marked "not held out" wherever it is shown. Existing snapshots read them
from their files (immutable: one TrainingDialogue JSON a line); a snapshot whose file is gone
records none."""

import hashlib
import json
from pathlib import Path

from django.db import migrations, models


def task_key(prompt, reference):  # as webapp.tasks.selectors.task_key
    canonical = json.dumps([prompt, reference], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def record_task_keys(apps, schema_editor):
    DatasetSnapshot = apps.get_model("training", "DatasetSnapshot")
    for snapshot in DatasetSnapshot.objects.all():
        path = Path(snapshot.path)
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as lines:
            keys = {task_key(d["task_prompt"], d["reference"]) for d in map(json.loads, lines)}
        snapshot.task_keys = sorted(keys)
        snapshot.save(update_fields=["task_keys"])


class Migration(migrations.Migration):
    dependencies = [("training", "0002_training_preview")]

    operations = [
        migrations.AddField(
            model_name="datasetsnapshot",
            name="task_keys",
            field=models.JSONField(
                default=list,
                help_text="The task_key of every task its dialogues play (webapp.training.heldout).",
            ),
        ),
        migrations.RunPython(record_task_keys, migrations.RunPython.noop),
    ]
