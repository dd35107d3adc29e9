"""Every run's configuration in the one frozen form the worker reads (``RunConfig``, schema 1).

Configurations stored before it are rewritten once, here: keys renamed
(``generation_params`` -> ``params``, ``prompt_templates`` -> ``templates``), options added
after a run was launched filled with the value it ran with (their defaults), ``stop_rules``
dropped (nothing read it), and the samples, batch size and seed moved in from the run's
columns, which go. The hash is recomputed over the new form. Plain dictionary code, not the
spec's classes: a migration must keep meaning what it meant when it was written.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from django.db import migrations

ROLES = ("student", "teacher", "user_simulator", "judge")
PROTOCOL_DEFAULTS = {
    "teacher_sees_reference": True,
    "teacher_sees_verifier_details": True,
    "self_correction": "nudge",
    "regenerate_leaks": 0,
    "judge_turn_kinds": False,
    "judge_leaks": False,
    "id": None,
    "name": "",
}
PROTOCOL_KEYS = ("mode", "max_turns", "templates", *PROTOCOL_DEFAULTS)


def _role(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
    if snapshot is None:
        return None
    return {
        "backend": snapshot["backend"],
        "location": snapshot["location"],
        "params": snapshot.get("params", snapshot.get("generation_params", {})),
        "id": snapshot.get("id"),
        "name": snapshot.get("name", ""),
    }


def _protocol(snapshot: dict[str, Any]) -> dict[str, Any]:
    merged = {**PROTOCOL_DEFAULTS, **snapshot}
    merged["templates"] = snapshot.get("templates", snapshot.get("prompt_templates", {}))
    return {key: merged[key] for key in PROTOCOL_KEYS}


def _task_set(snapshot: dict[str, Any]) -> dict[str, Any]:
    keys = ("id", "name", "version", "task_count", "fingerprint")
    return {key: snapshot[key] for key in keys}


def frozen(config: dict[str, Any], run: Any) -> dict[str, Any]:
    return {
        "schema": 1,
        "task_set": _task_set(config["task_set"]),
        "protocol": _protocol(config["protocol"]),
        **{role: _role(config.get(role)) for role in ROLES},
        "samples_per_task": config.get("samples_per_task", run.samples_per_task),
        "batch_size": config.get("batch_size", run.batch_size),
        "seed": config.get("seed", run.seed),
    }


def rewrite_configs(apps: Any, schema_editor: Any) -> None:
    Run = apps.get_model("runs", "Run")
    for run in Run.objects.exclude(config__has_key="schema").iterator(chunk_size=500):
        if "task_set" not in run.config or "protocol" not in run.config:
            continue  # not an evaluation launched through the service; nothing reads it
        run.config = frozen(run.config, run)
        canonical = json.dumps(run.config, sort_keys=True, separators=(",", ":"))
        run.config_hash = hashlib.sha256(canonical.encode()).hexdigest()
        run.save(update_fields=["config", "config_hash"])


class Migration(migrations.Migration):
    dependencies = [("runs", "0002_protocol_options_roles_and_recovery")]

    operations = [
        migrations.RunPython(rewrite_configs, migrations.RunPython.noop),
        migrations.RemoveField(model_name="run", name="samples_per_task"),
        migrations.RemoveField(model_name="run", name="batch_size"),
        migrations.RemoveField(model_name="run", name="seed"),
        migrations.RemoveField(model_name="protocol", name="stop_rules"),
    ]
