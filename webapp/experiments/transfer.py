"""The transfer matrix: does training on one domain help on another?

A row per trained model (a model with a base and the training run that made it), labelled by the
domains it trained on; a column per evaluation domain. A cell is the trained model's gain over
its base in accuracy after turn T on that domain's tasks, paired by task: every succeeded
evaluation of the trained model is paired with the newest succeeded evaluation of the base whose
configuration differs only in the student, and the cell pools the domain's tasks of every such
pair (``webapp.metrics.comparison.paired_gaps``: the comparison page's method).

Training domains: for online training, the domains of the rollout task set's tasks; for
training on a dataset snapshot, those of the task sets of the runs its dialogues came from (a
filter may have kept only some of them: the snapshot stores its runs, not its domains).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from models_gpu.spec.training_run import TrainingRunConfig
from webapp.metrics.comparison import Gap, paired_gaps
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.runs.selectors import task_outcomes
from webapp.tasks.models import Task
from webapp.tasks.selectors import task_keys
from webapp.training.heldout import overlap, trained_task_keys
from webapp.training.models import DatasetSnapshot

NO_DOMAIN = "(none)"


@dataclass(frozen=True)
class EvaluationPair:
    model: ModelSpec
    base_run: Run
    trained_run: Run


@dataclass(frozen=True)
class TransferCell:
    """A trained model's gain over its base on one evaluation domain, and how many of the tasks
    it is over the model trained on (then the cell is not held out)."""

    gap: Gap
    trained_on: int

    @property
    def held_out(self) -> bool:
        return self.trained_on == 0


@dataclass(frozen=True)
class TransferRow:
    model: ModelSpec
    training_domains: list[str]
    cells: list[TransferCell | None]  # one per evaluation domain, None: not evaluated there

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
    base_runs: dict[tuple[int | None, str], Run] = {}  # a model with no base finds none
    trained_runs: dict[int, list[Run]] = defaultdict(list)
    for run in evaluations:
        key = (run.student_id, run.frozen_config.student_free_hash())
        base_runs.setdefault(key, run)  # the newest first
        trained_runs[run.student_id].append(run)
    pairs = []
    for model in models:
        for run in trained_runs.get(model.pk, []):
            base = base_runs.get((model.base_model_id, run.frozen_config.student_free_hash()))
            if base is not None:
                pairs.append(EvaluationPair(model, base, run))
    return pairs


def _domains(task_ids: set[int]) -> dict[int, str]:
    tasks = Task.objects.filter(pk__in=task_ids).values_list("pk", "domain")
    return {pk: domain or NO_DOMAIN for pk, domain in tasks}


def transfer_matrix() -> TransferMatrix:
    """Every trained model against every evaluation domain its evaluations cover."""
    models = list(
        ModelSpec.objects.filter(base_model__isnull=False, trained_by_run__isnull=False)
        .select_related("trained_by_run")
        .order_by("name")
    )
    pairs = evaluation_pairs(models)
    outcomes = task_outcomes(
        runs=[run for pair in pairs for run in (pair.base_run, pair.trained_run)]
    )
    task_ids = {task for tasks in outcomes.values() for task in tasks}
    keys, domain_of = task_keys(task_ids=task_ids), _domains(task_ids)
    # {model id: {evaluation domain: ([base rates], [trained rates], [task keys])}}, tasks paired
    # within a pair, in the order the comparison page pairs them (by task key): a cell and the
    # comparison of the same two runs draw the same resamples, so they give the same numbers.
    pooled: dict[int, dict[str, tuple[list[float], list[float], list[str]]]] = defaultdict(dict)
    turns_of: dict[int, int] = {}  # the T a row's gains are at
    for pair in pairs:
        base, trained = outcomes.get(pair.base_run.pk, {}), outcomes.get(pair.trained_run.pk, {})
        turns = max(
            pair.base_run.frozen_config.protocol.max_turns,
            pair.trained_run.frozen_config.protocol.max_turns,
        )
        turns_of[pair.model.pk] = max(turns, turns_of.get(pair.model.pk, 0))
        for task in sorted(base.keys() & trained.keys(), key=keys.__getitem__):
            rates = pooled[pair.model.pk].setdefault(domain_of[task], ([], [], []))
            rates[0].append(base[task].rates(turns)[-1])
            rates[1].append(trained[task].rates(turns)[-1])
            rates[2].append(keys[task])
    domains = sorted({domain for cells in pooled.values() for domain in cells})
    rows = []
    for model in models:
        if model.pk not in pooled:
            continue
        trained_on = trained_task_keys(model)
        cells: list[TransferCell | None] = []
        for domain in domains:
            cell = pooled[model.pk].get(domain)
            if cell is None:
                cells.append(None)
                continue
            base_rates, trained_rates = (np.array(values)[:, None] for values in cell[:2])
            gap = replace(paired_gaps(base_rates, trained_rates)[0], turn=turns_of[model.pk])
            cells.append(TransferCell(gap, overlap(trained_on, cell[2]).trained_on))
        rows.append(TransferRow(model, training_domains(model), cells))
    return TransferMatrix(domains, rows, pairs)
