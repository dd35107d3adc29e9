"""Writes for forks: launch a run that plays stored dialogues on from one of their turns.

A fork keeps its parent's first turns and plays on under the run's own roles and protocol with
the parent's seed (``models_gpu.spec.run.ForkSpec``), so changing one role and nothing else
asks "what if this teacher had answered here?" of the very same conversation. The engine
refuses a prefix it cannot continue; the checks here refuse it first, at launch, with messages
that name the dialogues, instead of a run that fails in the worker.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from models_gpu.spec.run import ForkSpec, RunConfigError, checked
from models_gpu.spec.settings import Problem
from models_gpu.spec.turns import can_go_on, is_reply, next_turn
from webapp.accounts.models import User
from webapp.dialogues.models import Dialogue, Turn
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Protocol, Run
from webapp.runs.services import evaluation_config, evaluation_run_from_config
from webapp.tasks.models import TaskSet

# Above this, a counterfactual replay is a different experiment (split it by filter).
MAX_FORKS = 2000

SKIP_SOLVED = "solved by that turn"
SKIP_NO_REPLY = "no student reply at that turn"
SKIP_ERROR = "ended in an error"


def fork_point_problem(
    *, dialogue_id: int, turns: Sequence[Turn], keep: int, max_turns: int
) -> str:
    """Why dialogue ``dialogue_id`` (its ``turns`` in order) cannot go on after its first
    ``keep`` turns under a protocol of ``max_turns``; "" when it can."""
    if not 0 <= keep <= len(turns):
        return f"Dialogue #{dialogue_id} has {len(turns)} turns: it cannot keep {keep}."
    kept = turns[:keep]
    correct = next((turn for turn in kept if turn.is_correct), None)
    if correct is not None:
        return (
            f"Dialogue #{dialogue_id}: its first {keep} turns already hold a correct reply "
            f"(turn {correct.round}), so there is nothing to play on."
        )
    round_number, phase = next_turn(kept)
    if not can_go_on(round_number, phase, max_turns):
        return (
            f"Dialogue #{dialogue_id}: after its first {keep} turns the next turn would answer "
            f"turn {round_number}, and the protocol stops at {max_turns} turns: keep fewer "
            "turns or choose a protocol with more."
            if phase == "respond"
            else f"Dialogue #{dialogue_id}: after its first {keep} turns the next turn would be "
            f"turn {round_number}, past the protocol's {max_turns} turns."
        )
    return ""


@dataclass(frozen=True)
class ForkPoint:
    """A turn a dialogue can be forked after: keep its first ``keep`` turns."""

    keep: int
    index: int  # the last kept turn's index
    round: int
    role: str
    label: str


def fork_points(*, turns: Sequence[Turn], max_turns: int, dialogue_id: int = 0) -> list[ForkPoint]:
    """Every turn of a dialogue that a fork under a protocol of ``max_turns`` can go on after,
    labelled for a select ("after Student · turn 2 · message #3: The answer is…", the
    message named as on every page)."""
    points = []
    for turn in turns:
        keep = turn.index + 1
        if fork_point_problem(dialogue_id=dialogue_id, turns=turns, keep=keep, max_turns=max_turns):
            continue
        text = " ".join(turn.text.split())
        head = text if len(text) <= 40 else f"{text[:40].rstrip()}…"
        points.append(
            ForkPoint(
                keep=keep,
                index=turn.index,
                round=turn.round,
                role=turn.role,
                label=f"after {turn.message_label}: {head}",
            )
        )
    return points


def _parent_turns(parent_ids: Iterable[int]) -> dict[int, list[Turn]]:
    """Each parent's turns in order, with only what the checks read."""
    turns: dict[int, list[Turn]] = {}
    for turn in (
        Turn.objects.filter(dialogue_id__in=list(parent_ids))
        .only("dialogue_id", "index", "round", "role", "is_correct", "private_context")
        .order_by("dialogue_id", "index")
    ):
        turns.setdefault(turn.dialogue_id, []).append(turn)
    return turns


def _ids(dialogues: Iterable[Dialogue], limit: int = 10) -> str:
    ids = [f"#{d.pk}" for d in dialogues]
    return ", ".join(ids[:limit]) + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def fork_problems(*, parents: Sequence[tuple[Dialogue, int]], max_turns: int) -> list[Problem]:
    """Every reason these (parent, turns kept) pairs cannot be forked together; the parents'
    tasks must be rows of one task set (``task.task_set_id`` loaded)."""
    if not parents:
        return [Problem("forks", "No dialogue to fork: choose at least one.")]
    if len(parents) > MAX_FORKS:
        return [Problem("forks", f"{len(parents)} forks: at most {MAX_FORKS} in one run.")]
    problems = []
    by_set: dict[int, list[Dialogue]] = {}
    for dialogue, _ in parents:
        by_set.setdefault(dialogue.task.task_set_id, []).append(dialogue)
    if len(by_set) > 1:
        sets = "; ".join(
            f"{_ids(dialogues)} of task set #{set_id}" for set_id, dialogues in by_set.items()
        )
        problems.append(
            Problem("forks", f"A run plays one task set, and these parents span several: {sets}.")
        )
    turns = _parent_turns(dialogue.pk for dialogue, _ in parents)
    for dialogue, keep in parents:
        problem = fork_point_problem(
            dialogue_id=dialogue.pk,
            turns=turns.get(dialogue.pk, []),
            keep=keep,
            max_turns=max_turns,
        )
        if problem:
            problems.append(Problem("forks", problem))
    return problems


def fork_run_create(
    *,
    name: str,
    parents: Sequence[tuple[Dialogue, int]],
    student: ModelSpec,
    teacher: ModelSpec | None,
    user_simulator: ModelSpec | None = None,
    judge: ModelSpec | None = None,
    protocol: Protocol,
    seed: int = 0,
    people: Sequence[User] = (),
    created_by: User | None,
) -> Run:
    """Create and dispatch a run that plays each parent on from its first ``keep`` turns under
    these roles and protocol (fork i is the run's sample i). ``RunConfigError`` (nothing
    created) when the choices cannot run or a parent cannot be forked there. ``seed`` is the
    run's own (recorded in its configuration): each fork plays with its parent's seed."""
    parents = _with_tasks(parents)
    problems = fork_problems(parents=parents, max_turns=protocol.max_turns)
    if problems:
        raise RunConfigError(problems)
    task_set = TaskSet.objects.get(pk=parents[0][0].task.task_set_id)
    config = evaluation_config(
        task_set=task_set,
        protocol=protocol,
        student=student,
        teacher=teacher,
        user_simulator=user_simulator,
        judge=judge,
        seed=seed,
        check=False,
    )
    forks = ForkSpec(tuple((dialogue.pk, keep) for dialogue, keep in parents))
    config = checked(dataclasses.replace(config, forks=forks))
    return evaluation_run_from_config(
        name=name, config=config, created_by=created_by, people=people
    )


def _with_tasks(parents: Sequence[tuple[Dialogue, int]]) -> list[tuple[Dialogue, int]]:
    """The parents again with their tasks, in one query."""
    rows = Dialogue.objects.select_related("task").defer("search_document", "task__prompt")
    loaded = rows.in_bulk([dialogue.pk for dialogue, _ in parents])
    return [(loaded.get(dialogue.pk, dialogue), keep) for dialogue, keep in parents]


def counterfactual_parents(
    dialogues: Iterable[Dialogue], after_round: int
) -> tuple[list[tuple[Dialogue, int]], dict[str, int]]:
    """For "replay from turn t with another teacher": each dialogue with the number of its
    turns through the student's reply of turn ``after_round`` (the new teacher answers that
    reply), and how many were skipped for each reason: solved by then (nothing to replay), no
    student reply at that turn (the dialogue ended before it), or ended in an error.
    ``dialogues`` with their turns (``prefetch_related("turns")`` spares a query each)."""
    parents: list[tuple[Dialogue, int]] = []
    skipped: Counter[str] = Counter()
    for dialogue in dialogues:
        if dialogue.first_correct_turn is not None and dialogue.first_correct_turn <= after_round:
            skipped[SKIP_SOLVED] += 1
            continue
        if dialogue.outcome == Dialogue.Outcome.ERROR:
            skipped[SKIP_ERROR] += 1
            continue
        reply = next(
            (turn for turn in dialogue.turns.all() if turn.round == after_round and is_reply(turn)),
            None,
        )
        if reply is None:
            skipped[SKIP_NO_REPLY] += 1
            continue
        parents.append((dialogue, reply.index + 1))
    return parents, dict(skipped)
