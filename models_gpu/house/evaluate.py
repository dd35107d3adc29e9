"""Measure a house checkpoint the way Dialab runs it: the ``transformers`` backend, the dialogue
engine, the numeric verifier and the scripted feedback teacher, on held-out tasks only."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from models_gpu.backends import load_generator
from models_gpu.engine import run_dialogues
from models_gpu.generators.families import guess_number, task_spec
from models_gpu.house.corpus import GUESS_LOWERS, GUESS_RANGE_SIZE, GUESS_TURNS, held_out_tasks
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.run import RoleSpec
from models_gpu.types import DialogueJob, DialogueResult
from models_gpu.verifiers.feedback_use import move_counts

# (label, digits, operations): what the one-turn accuracy is reported on.
EVAL_KINDS: tuple[tuple[str, int, str], ...] = (
    ("1-digit +-", 1, "+-"),
    ("2-digit +-", 2, "+-"),
    ("2-digit *", 2, "*"),
    ("3-digit +-", 3, "+-"),
)
HEADLINE = ("1-digit +-", "2-digit +-")  # "one_turn_accuracy": the model's home ground


def evaluate(
    model_dir: str | Path, *, seed: int = 0, tasks_per_kind: int = 100, max_turns: int = 3
) -> dict[str, Any]:
    """One-turn accuracy (greedy) per kind of task, the didactic accuracy after each turn
    (sampling at temperature 0.7, the scripted feedback teacher) on 2-digit sums and differences,
    and how it plays guess the number (``evaluate_guessing``, ``tasks_per_kind`` games)."""
    greedy = {"temperature": 0.0, "max_new_tokens": 16, "device": "cpu"}
    by_kind: dict[str, float] = {}
    counts: dict[str, tuple[int, int]] = {}
    for label, digits, operations in EVAL_KINDS:
        jobs = _jobs(
            held_out_tasks(tasks_per_kind, seed=seed, digits=digits, operations=operations)
        )
        results = _run(model_dir, jobs, ProtocolSpec("single_turn", 1), greedy)
        solved = sum(result.solved for result in results)
        counts[label] = (solved, len(results))
        by_kind[label] = round(solved / len(results), 3)
    headline_solved = sum(counts[label][0] for label in HEADLINE)
    headline_total = sum(counts[label][1] for label in HEADLINE)

    sampled = {"temperature": 0.7, "max_new_tokens": 16, "device": "cpu"}
    jobs = _jobs(held_out_tasks(tasks_per_kind, seed=seed, digits=2, operations="+-"))
    results = _run(model_dir, jobs, ProtocolSpec("didactic", max_turns), sampled)
    return {
        "one_turn_accuracy": round(headline_solved / headline_total, 3),
        "one_turn_accuracy_tasks": headline_total,
        "one_turn_accuracy_by_kind": by_kind,
        "didactic_2_digit_accuracy_by_turn": _cumulative_accuracy(results, max_turns),
        "didactic_temperature": sampled["temperature"],
        **evaluate_guessing(model_dir, seed=seed, games=tasks_per_kind),
    }


def evaluate_guessing(
    model_dir: str | Path, *, seed: int = 0, games: int = 64, turns: int = GUESS_TURNS
) -> dict[str, Any]:
    """How the model plays guess the number (sampling at temperature 1, the scripted teacher's
    feedback), against a player with no strategy: the share of valid moves, accuracy after each
    turn beside a uniformly random valid guesser's (``1 - (1 - 1/range)^k``), and the share of
    later moves consistent with the feedback so far beside its chance level
    (``verifiers.feedback_use``)."""
    rng = random.Random(f"house-guessing:{seed}")
    tasks = []
    for _ in range(games):
        low = rng.choice(GUESS_LOWERS)
        tasks.append(guess_number(rng, {"low": low, "high": low + GUESS_RANGE_SIZE - 1}))
    sampled = {"temperature": 1.0, "max_new_tokens": 12, "device": "cpu"}
    results = _run(model_dir, _jobs(tasks), ProtocolSpec("didactic", turns), sampled)
    moves, _ = move_counts(turn for result in results for turn in result.turns)
    miss = 1 - 1 / GUESS_RANGE_SIZE
    return {
        "guessing_games": len(results),
        "guessing_valid_moves": _rounded(_share(moves.valid, moves.moves)),
        "guessing_accuracy_by_turn": _cumulative_accuracy(results, turns),
        "guessing_random_accuracy_by_turn": [round(1 - miss**k, 3) for k in range(1, turns + 1)],
        "guessing_consistent_moves": _rounded(_share(moves.consistent, moves.later)),
        "guessing_consistent_by_chance": _rounded(moves.chance),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _rounded(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def _jobs(tasks: Sequence[Mapping[str, Any]]) -> list[DialogueJob]:
    return [
        DialogueJob(
            task=task_spec(task, index),
            sample_index=0,
            seed=index,
        )
        for index, task in enumerate(tasks)
    ]


def _run(
    model_dir: str | Path,
    jobs: list[DialogueJob],
    protocol: ProtocolSpec,
    params: Mapping[str, Any],
) -> list[DialogueResult]:
    student = load_generator(RoleSpec("transformers", str(model_dir), params))
    teacher = load_generator(RoleSpec("scripted", "feedback-teacher"))
    results: list[DialogueResult] = []
    run_dialogues(
        jobs,
        protocol,
        student=student,
        teacher=teacher if protocol.mode == "didactic" else None,
        on_finished=results.extend,
        batch_size=len(jobs),
    )
    return results


def _cumulative_accuracy(results: list[DialogueResult], max_turns: int) -> list[float]:
    """Share of dialogues solved by turn k, for k = 1..max_turns."""
    return [
        round(
            sum(r.first_correct_turn is not None and r.first_correct_turn <= k for r in results)
            / len(results),
            3,
        )
        for k in range(1, max_turns + 1)
    ]
