"""Runs launched before the configuration was frozen in full are rewritten once by a migration
into the form the worker reads."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

from models_gpu.spec.run import RunConfig

migration = importlib.import_module("webapp.runs.migrations.0003_frozen_run_config")

OLD_CONFIG = {
    "task_set": {"id": 3, "name": "sums", "version": 2, "task_count": 10, "fingerprint": "ab"},
    "student": {"id": 1, "name": "s", "backend": "scripted", "location": "arithmetic-student",
                "generation_params": {"first_try_accuracy": 0.5}},
    "teacher": {"id": 2, "name": "t", "backend": "scripted", "location": "feedback-teacher",
                "generation_params": {}},
    # No user simulator or judge: launched before those roles existed.
    "protocol": {"id": 4, "name": "p", "mode": "didactic", "max_turns": 4,
                 "teacher_sees_reference": True, "teacher_sees_verifier_details": False,
                 "prompt_templates": {"student_system": "Solve it."}, "stop_rules": {}},
    "samples_per_task": 2,
}  # fmt: skip


def test_an_old_configuration_becomes_one_the_worker_reads() -> None:
    columns = SimpleNamespace(samples_per_task=9, batch_size=32, seed=7)
    config = RunConfig.from_json(migration.frozen(OLD_CONFIG, columns))
    assert config.student.params == {"first_try_accuracy": 0.5}
    assert config.user_simulator is None and config.judge is None
    assert config.protocol.templates == {"student_system": "Solve it."}
    assert config.protocol.teacher_sees_verifier_details is False
    assert config.protocol.self_correction == "nudge"  # the default it ran with
    assert (config.samples_per_task, config.batch_size, config.seed) == (2, 32, 7)
