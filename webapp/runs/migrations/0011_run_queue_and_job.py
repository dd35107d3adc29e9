from django.db import migrations, models


def people_runs_to_the_interactive_queue(apps, schema_editor):  # type: ignore[no-untyped-def]
    """Runs with a person in them were played on the batch queue before: their next jobs (a
    person's answer wakes them) go to the interactive one, as a new run's would."""
    Run = apps.get_model("runs", "Run")
    Run.objects.filter(people__isnull=False).update(queue="interactive")


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0010_strip_credentials_from_configs"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="job_id",
            field=models.CharField(
                blank=True,
                help_text="The Celery id of its latest job (revoked on cancel).",
                max_length=64,
            ),
        ),
        migrations.AddField(
            model_name="run",
            name="queue",
            field=models.CharField(
                default="gpu",
                help_text="The Celery queue its jobs go to (webapp.core.queues.run_queue).",
                max_length=32,
            ),
        ),
        migrations.RunPython(people_runs_to_the_interactive_queue, migrations.RunPython.noop),
    ]
