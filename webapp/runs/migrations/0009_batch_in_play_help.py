from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("runs", "0008_drop_miscounted_heldout_curves")]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="batch_in_play",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="How far the batch of dialogues the worker is playing got "
                "(webapp.metrics.partial.BatchInPlay): what a partial run's figures count.",
            ),
        ),
    ]
