"""Runs froze their models' locations into ``Run.config`` at launch, so a key saved in a model's
URL before credentials were refused (``user:key@``, ``?api_key=``, plainly or percent-encoded)
may be there too, and in the error the run recorded (errors quoted the endpoint's URL). Every
role in a configuration (any object with a ``backend`` and a ``location``: the roles of an
evaluation, a training run's base model, question writer and rollouts) gets its location
rewritten as the model's row was (``models_registry`` 0006), and each error is redacted.

``config_hash`` is left as it is: it names the configuration the run was launched with (a hash
shows no key), and a training run's checkpoint directory is named after it.

The helpers are imported rather than copied so that old rows are cleaned by the same rules the
running code applies; both are pure functions of a string (no model, no settings), so later
changes to the app's models cannot break this migration.
"""

from django.db import migrations

from webapp.core.redaction import credential_free_location, redact


def _cleaned(value):
    if isinstance(value, dict):
        cleaned = {key: _cleaned(item) for key, item in value.items()}
        if isinstance(cleaned.get("backend"), str) and isinstance(cleaned.get("location"), str):
            cleaned["location"] = credential_free_location(cleaned["location"])
        return cleaned
    if isinstance(value, list):
        return [_cleaned(item) for item in value]
    return value


def strip_credentials(apps, schema_editor):
    Run = apps.get_model("runs", "Run")
    for run in Run.objects.only("id", "config", "error").iterator():
        config, error = _cleaned(run.config), redact(run.error)
        if config != run.config or error != run.error:
            Run.objects.filter(pk=run.pk).update(config=config, error=error)


class Migration(migrations.Migration):
    dependencies = [("runs", "0009_batch_in_play_help")]

    # Not reversible in any useful sense: the credentials are gone, as intended.
    operations = [migrations.RunPython(strip_credentials, migrations.RunPython.noop)]
