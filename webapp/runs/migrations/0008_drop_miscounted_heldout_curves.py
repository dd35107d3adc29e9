"""Online training's held-out curves recorded before the held-out evaluation was fixed counted
one dialogue per sample index instead of every held-out dialogue (its results were keyed by
sample index: 32 tasks x 8 samples came back as 8 dialogues, each repeated 32 times), so every
"heldout_turn_k" point with more than one held-out task is wrong and cannot be recomputed: the
dialogues were not kept. They are removed; the evaluations run after training (base and trained
model, ordinary runs with their dialogues) are unaffected. Held-out evaluations now record their
counts ("heldout_dialogues", "heldout_solved_turn_k", ``models_gpu.spec.reports.Curve``).
"""

from django.db import migrations


def drop_miscounted(apps, schema_editor):
    MetricPoint = apps.get_model("runs", "MetricPoint")
    MetricPoint.objects.filter(name__startswith="heldout_turn_").delete()
    MetricPoint.objects.filter(name__startswith="priming_heldout_turn_").delete()


class Migration(migrations.Migration):
    dependencies = [("runs", "0007_run_people_and_waiting")]

    operations = [migrations.RunPython(drop_miscounted, migrations.RunPython.noop)]
