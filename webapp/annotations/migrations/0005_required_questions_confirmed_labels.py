"""Questions can be optional (every other one must be answered to submit), a skip keeps its
reason, and each answer says where it came from: suggestions that item submission stored without
the annotator confirming them are marked, so that they no longer count as labels
(webapp/annotations/legacy_prefills.py has the rule)."""

from django.db import migrations, models

from webapp.annotations.legacy_prefills import mark_unconfirmed_prefills


def mark(apps, schema_editor):  # type: ignore[no-untyped-def]
    mark_unconfirmed_prefills(
        annotation_model=apps.get_model("annotations", "Annotation"),
        revision_model=apps.get_model("annotations", "AnnotationRevision"),
    )


class Migration(migrations.Migration):
    dependencies = [("annotations", "0004_default_schemas")]

    operations = [
        migrations.AddField(
            model_name="annotation",
            name="source",
            field=models.CharField(
                choices=[
                    ("person", "Chosen by the annotator"),
                    ("confirmed_suggestion", "A suggestion the annotator confirmed"),
                    ("unconfirmed_prefill", "A suggestion nobody confirmed"),
                ],
                default="person",
                max_length=24,
            ),
        ),
        migrations.AddField(
            model_name="labelquestion",
            name="optional",
            field=models.BooleanField(
                default=False,
                help_text="Annotators may submit an item without answering it (otherwise required).",
            ),
        ),
        migrations.AddField(
            model_name="queueassignment",
            name="skip_reason",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        # Reversed, the column goes away with what it marked.
        migrations.RunPython(mark, migrations.RunPython.noop),
    ]
