"""The transfer matrix: does training on one domain help on another?

A row per trained model (a model with a base and the training run that made it), labelled by the
domains it trained on; a column per evaluation domain. A cell is the trained model's gain over
its base in accuracy after turn T on that domain's tasks, paired by task: every succeeded
evaluation of the trained model is paired with the newest succeeded evaluation of the base whose
configuration differs only in the student, and the cell pools the domain's tasks of every such
pair (``paired.paired_gaps``: mean difference, bootstrap interval, sign-flip test).

Training domains: for online training, the domains of the rollout task set's tasks; for
training on a dataset snapshot, those of the task sets of the runs its dialogues came from (a
filter may have kept only some of them: the snapshot stores its runs, not its domains).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.db.models import Count, F

from models_gpu.spec.training_run import TrainingRunConfig
from webapp.dialogues.models import Dialogue
from webapp.experiments.comparison import task_key
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.paired import PairedGap, paired_gaps
from webapp.tasks.models import Task
from webapp.training.models import DatasetSnapshot

NO_DOMAIN = "(none)"


@dataclass(frozen=True)
class EvaluationPair:
    model: ModelSpec
    base_run: Run
    trained_run: Run


@dataclass(frozen=True)
class TransferRow:
    model: ModelSpec
    training_domains: list[str]
    cells: list[PairedGap | None]  # one per evaluation domain, None: not evaluated there

    @property
    def label(self) -> str:
        return ", ".join(self.training_domains) or NO_DOMAIN


@dataclass(frozen=True)
class TransferMatrix:
    domains: list[str]
    rows: list[TransferRow]
    pairs: list[EvaluationPair]


def _task_set_domains(task_set_ids: Sequence[int]) -> list[str]:
    domains = Task.objects.filter(task_set_id__in=task_set_ids).values_list("domain", flat=True)
    return sorted({domain or NO_DOMAIN for domain in domains})


def training_domains(model: ModelSpec) -> list[str]:
    """The domains of the tasks ``model`` was trained on (see the module docstring)."""
    run = model.trained_by_run
    if run is None:
        return []
    config = TrainingRunConfig.from_json(run.config)
    task_sets = [config.rollouts.task_set.id] if config.rollouts is not None else []
    if config.dataset is not None:
        snapshot = DatasetSnapshot.objects.filter(pk=config.dataset.id).first()
        source_runs = [entry["id"] for entry in snapshot.source_runs] if snapshot else []
        task_sets += Run.objects.filter(pk__in=source_runs).values_list("task_set_id", flat=True)
    return _task_set_domains([task_set for task_set in task_sets if task_set is not None])


def evaluation_pairs(models: Sequence[ModelSpec]) -> list[EvaluationPair]:
    """Each succeeded evaluation of these trained models with the newest succeeded evaluation
    of its base under the same configuration but the student."""
    bases = {model.base_model_id for model in models}
    evaluations = Run.objects.filter(
        kind=Run.Kind.EVAL,
        status=Run.Status.SUCCEEDED,
        student_id__in={model.pk for model in models} | bases,
    ).order_by("-created_at")
    base_runs: dict[tuple[int, str], Run] = {}
    trained_runs: dict[int, list[Run]] = defaultdict(list)
    for run in evaluations:
        key = (run.student_id, run.frozen_config.student_free_hash())
        base_runs.setdefault(key, run)  # the newest first
        trained_runs[run.student_id].append(run)
    pairs = []
    for model in models:
        for run in trained_runs.get(model.pk, []):
            base = base_runs.get((model.base_model_id, run.frozen_config.student_free_hash()))  # type: ignore[arg-type]
            if base is not None:
                pairs.append(EvaluationPair(model, base, run))
    return pairs


def _solved_by_task(runs: Sequence[Run]) -> dict[int, dict[int, tuple[str, float]]]:
    """``{run id: {task id: (domain, share of its dialogues solved by the run's T)}}``."""
    max_turns = {run.pk: run.frozen_config.protocol.max_turns for run in runs}
    rows = (
        Dialogue.objects.filter(run_id__in=list(max_turns))
        .values("run_id", "task_id", "first_correct_turn", domain=F("task__domain"))
        .annotate(n=Count("id"))
        .order_by()
    )
    counts: dict[int, dict[int, list]] = defaultdict(dict)  # type: ignore[type-arg]
    for row in rows:
        entry = counts[row["run_id"]].setdefault(row["task_id"], [row["domain"] or NO_DOMAIN, 0, 0])
        turn = row["first_correct_turn"]
        entry[1] += row["n"] if turn is not None and turn <= max_turns[row["run_id"]] else 0
        entry[2] += row["n"]
    return {
        run_id: {task: (domain, solved / n) for task, (domain, solved, n) in tasks.items()}
        for run_id, tasks in counts.items()
    }


def _comparison_order(task_ids: set[int]) -> dict[int, str]:
    """Tasks in the order the comparison page pairs them (by ``comparison.task_key``), so that a
    cell and the comparison of the same two runs draw the same resamples: the same numbers."""
    tasks = Task.objects.filter(pk__in=task_ids).values_list("pk", "prompt", "reference")
    return {pk: task_key(prompt, reference) for pk, prompt, reference in tasks}


def transfer_matrix() -> TransferMatrix:
    """Every trained model against every evaluation domain its evaluations cover."""
    models = list(
        ModelSpec.objects.filter(base_model__isnull=False, trained_by_run__isnull=False)
        .select_related("trained_by_run")
        .order_by("name")
    )
    pairs = evaluation_pairs(models)
    solved = _solved_by_task([run for pair in pairs for run in (pair.base_run, pair.trained_run)])
    # {model id: {evaluation domain: ([base rates], [trained rates])}}, tasks paired within a pair.
    pooled: dict[int, dict[str, tuple[list[float], list[float]]]] = defaultdict(dict)
    order = _comparison_order({task for rates in solved.values() for task in rates})
    for pair in pairs:
        base, trained = solved.get(pair.base_run.pk, {}), solved.get(pair.trained_run.pk, {})
        for task in sorted(base.keys() & trained.keys(), key=order.__getitem__):
            domain = base[task][0]
            rates = pooled[pair.model.pk].setdefault(domain, ([], []))
            rates[0].append(base[task][1])
            rates[1].append(trained[task][1])
    domains = sorted({domain for cells in pooled.values() for domain in cells})
    rows = []
    for model in models:
        if model.pk not in pooled:
            continue
        cells: list[PairedGap | None] = []
        for domain in domains:
            rates = pooled[model.pk].get(domain)
            if rates is None:
                cells.append(None)
                continue
            base_rates, trained_rates = (np.array(values)[:, None] for values in rates)
            cells.append(paired_gaps(base_rates, trained_rates)[0])
        rows.append(TransferRow(model, training_domains(model), cells))
    return TransferMatrix(domains, rows, pairs)
