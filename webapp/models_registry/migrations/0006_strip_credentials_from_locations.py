"""Models saved before credentials were refused may hold one in their location: a URL with
``user:key@``, a ``?api_key=`` query or a fragment, plainly or percent-encoded
(``/v1%3Fapi_key%3Dsk-...``). Each such location is rewritten to the URL without userinfo, query
and fragment, or blanked where that still shows a secret or cannot be parsed (such a model is
then refused at launch until someone gives it a location again).

``credential_free_location`` is imported rather than copied so that old rows are cleaned by the
same rule the running code applies; it is a pure function of a string (no model, no settings),
so later changes to the app's models cannot break this migration.
"""

from django.db import migrations

from webapp.core.redaction import credential_free_location


def strip_credentials(apps, schema_editor):
    ModelSpec = apps.get_model("models_registry", "ModelSpec")
    for model in ModelSpec.objects.only("id", "location").iterator():
        cleaned = credential_free_location(model.location)
        if cleaned != model.location:
            ModelSpec.objects.filter(pk=model.pk).update(location=cleaned)


class Migration(migrations.Migration):
    dependencies = [("models_registry", "0005_person_backend_label")]

    # Not reversible in any useful sense: the credentials are gone, as intended.
    operations = [migrations.RunPython(strip_credentials, migrations.RunPython.noop)]
