"""Plain model-side specs (models_gpu.types) built from what the web side stores."""

from __future__ import annotations

import hashlib
import json
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


def role_key(spec: RoleSpec) -> str:
    """Identifies a role's model, so roles played by the same model load it once."""
    return json.dumps([spec.backend, spec.location, dict(spec.params)], sort_keys=True, default=str)


def protocol_spec(snapshot: dict[str, Any]) -> ProtocolSpec:
    """From a run's frozen protocol; runs launched before an option existed get its default."""
    return ProtocolSpec(
        mode=snapshot["mode"],
        max_turns=snapshot["max_turns"],
        teacher_sees_reference=snapshot["teacher_sees_reference"],
        teacher_sees_verifier_details=snapshot["teacher_sees_verifier_details"],
        templates=snapshot["prompt_templates"],
        self_correction=snapshot.get("self_correction", "nudge"),
        regenerate_leaks=snapshot.get("regenerate_leaks", 0),
        judge_turn_kinds=snapshot.get("judge_turn_kinds", False),
        judge_leaks=snapshot.get("judge_leaks", False),
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
