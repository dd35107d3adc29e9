"""Plain model-side specs (models_gpu.types) built from what the web side stores."""

from __future__ import annotations

import hashlib
from typing import Any

from models_gpu.types import ProtocolSpec, RoleSpec, TaskSpec, Verdict


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


def role_spec(snapshot: dict[str, Any] | None) -> RoleSpec | None:
    """From a run's frozen model snapshot; None when the role is not played."""
    if snapshot is None:
        return None
    return RoleSpec(
        backend=snapshot["backend"],
        location=snapshot["location"],
        params=snapshot["generation_params"],
    )


def protocol_spec(snapshot: dict[str, Any]) -> ProtocolSpec:
    return ProtocolSpec(
        mode=snapshot["mode"],
        max_turns=snapshot["max_turns"],
        teacher_sees_reference=snapshot["teacher_sees_reference"],
        teacher_sees_verifier_details=snapshot["teacher_sees_verifier_details"],
        templates=snapshot["prompt_templates"],
    )


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
