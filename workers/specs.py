"""Plain model-side specs (models_gpu.types) built from what the web side stores, and back."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from models_gpu.spec.run import RoleSpec
from models_gpu.types import TaskSpec, Verdict


def task_spec(row: dict[str, Any]) -> TaskSpec:
    """From a Task's values (``id``, ``prompt``, ``reference``, ... as selected by the web side)."""
    return TaskSpec(
        task_id=row["id"],
        prompt=row["prompt"],
        reference=row["reference"],
        verifier_kind=row["verifier_kind"],
        verifier_config=row["verifier_config"],
        shards=tuple(row["shards"]),
        domain=row["domain"],
    )


def role_key(spec: RoleSpec) -> str:
    """Identifies a role's model, so roles played by the same model load it once."""
    return json.dumps([spec.backend, spec.location, dict(spec.params)], sort_keys=True, default=str)


def dialogue_seed(run_seed: int, task_id: int, sample_index: int) -> int:
    """A per-dialogue seed that does not depend on order, batch or which worker runs it."""
    digest = hashlib.sha256(f"{run_seed}:{task_id}:{sample_index}".encode()).digest()
    return int.from_bytes(digest[:7], "big")  # fits a signed 64-bit column


def verdict_row(verdict: Verdict) -> dict[str, Any]:
    return {
        "correct": verdict.correct,
        "score": verdict.score,
        "extracted": verdict.extracted,
        "details": dict(verdict.details),
    }
