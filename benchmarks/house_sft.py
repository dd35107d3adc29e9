"""Does SFT on the house model's own solved dialogues raise its multi-turn accuracy on held-out
tasks? ("Close the loop: training".) One run of the whole loop, in-process, through the real
services:

    DIALAB_DATA_DIR=/tmp/house_sft .venv/bin/python benchmarks/house_sft.py
    .venv/bin/python benchmarks/house_sft.py --data-dir /tmp/house_sft --seed 1 \
        --model /tmp/house_sft/models/house

1. The house model: built into ``<data dir>/models/house`` by the ``build_house_model``
   management command (reused when already built there), or ``--model DIR``; registered as a
   ``transformers`` model with the command's generation parameters (temperature 0.7, at most 32
   new tokens).
2. Two arithmetic task sets from the ``arithmetic`` generator (2-digit operands, ``+-``: the
   house model's home ground): a training set and a held-out set with different seeds. Each set
   holds distinct prompts and the held-out set holds none of the training set's (checked in the
   database after the import). A didactic protocol (``--max-turns``, 4) and the scripted
   feedback teacher ("too high" / "too low"; it never states the answer).
3. Collection: the house model plays the training set, ``--samples`` dialogues per task
   (``execute_evaluation``, as a worker does).
4. Its solved dialogues become a dataset snapshot (``snapshot_create`` with
   ``run=<id>&outcome=solved``), a training run (offline SML: SFT on the student's turns, full
   fine-tuning) is launched with the held-out evaluation, ``execute_training`` trains, registers
   the model and launches the two evaluations (base and trained, same configuration and seeds),
   which ``execute_evaluation`` then plays.
5. Accuracy after turn k (k = 1..T) of both on the held-out set with 95% Wilson intervals, and
   the difference per turn paired over held-out tasks (``runs_compared``: the bootstrap
   interval and sign-flip test of every comparison page, the training run's page included;
   the two evaluations play the SAME tasks with the same dialogue seeds, and K samples of a
   task are not independent). The ``name: value`` lines at the end are the headline.

Hyperparameters, fixed before any run (not tuned on the held-out set):
    learning rate 1e-4   the house pre-training's own final learning rate (cosine decay from
                         1e-3 to 1e-4, ``models_gpu/house/train.py``): fine-tuning continues
                         where pre-training stopped, without the 1e-3 peak that would move a
                         0.58M-weight model far from it. (The form's default, 2e-5, is meant for
                         pretrained LLMs.)
    2 epochs, batch 8    every solved dialogue seen twice; AdamW, linear decay, no warm-up, no
                         weight decay (the TrainingConfig defaults), float32, no gradient
                         checkpointing (the model is tiny: it changes speed, not results).

Speed (2 cores, transformers backend on CPU, measured 2026-11-25 with other work running): the
defaults (400 training tasks x 4 samples, 200 held-out tasks x 4 samples: 1,600 + 2 x 800
dialogues) took 624 s with the house model already built (collection 246 s, training 76 s, each
held-out evaluation about 147 s); building the house model took another 1,166 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA_DIR = "/tmp/house_sft"
USERNAME = "house-sft"
TEACHER_NAME = "scripted feedback teacher"  # as the demo registers it
TASK_KNOBS = {"digits": 2, "operations": "+-"}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="SFT of the house model on its own solved dialogues; held-out multi-turn "
        "accuracy before and after.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("DIALAB_DATA_DIR", DEFAULT_DATA_DIR),
        help="DIALAB_DATA_DIR for this run (its SQLite database unless "
        "DATABASE_URL is set, snapshots, checkpoints, the house model)",
    )
    parser.add_argument(
        "--model",
        type=Path,
        default=None,
        help="an existing house checkpoint directory (default: build or reuse "
        "<data dir>/models/house)",
    )
    parser.add_argument(
        "--house-seed", type=int, default=0, help="seed of the house build when it is built here"
    )
    parser.add_argument("--train-tasks", type=int, default=400)
    parser.add_argument("--held-out-tasks", type=int, default=200)
    parser.add_argument(
        "--samples",
        type=int,
        default=4,
        help="dialogues per task, collection and held-out evaluation alike",
    )
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument(
        "--steps", type=int, default=0, help="optimizer steps (0: as many as --epochs need)"
    )
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=8, help="training batch")
    parser.add_argument(
        "--eval-batch-size",
        type=int,
        default=256,
        help="dialogues advanced together in an evaluation",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="task sets, sampling and training all derive from it"
    )
    args = parser.parse_args(argv)
    for name in ("train_tasks", "held_out_tasks", "samples", "max_turns", "epochs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def setup_django(data_dir: str) -> None:
    """Migrate this run's database (in a subprocess, as benchmarks/transcripts.py does), then
    set Django up in this process."""
    os.environ["DIALAB_DATA_DIR"] = str(Path(data_dir).resolve())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    Path(data_dir).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=os.environ, check=True
    )
    import django

    django.setup()


class Clock:
    """Wall seconds per phase, in order."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.started = time.perf_counter()

    def time(self, name: str, function: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        print(f"[{time.perf_counter() - self.started:7.1f} s] {name}...", flush=True)
        result = function(*args, **kwargs)
        self.phases[name] = round(time.perf_counter() - started, 1)
        print(
            f"[{time.perf_counter() - self.started:7.1f} s] {name}: {self.phases[name]:.1f} s",
            flush=True,
        )
        return result

    @property
    def total(self) -> float:
        return round(time.perf_counter() - self.started, 1)


# --- The house model, the teacher, the protocol, the tasks ---------------------------------------


def house_model(model_dir: Path | None, house_seed: int) -> tuple[Any, dict[str, Any]]:
    """The house checkpoint registered as a transformers model, and its build notes."""
    from django.core.management import call_command

    from models_gpu.house.model import METADATA_FILE
    from webapp.models_registry.house import HOUSE_MODEL_NAME, house_model_dir
    from webapp.models_registry.models import ModelSpec
    from webapp.models_registry.services import model_spec_register
    from workers.management.commands.build_house_model import (
        HOUSE_GENERATION_PARAMS,
        house_description,
    )

    if model_dir is None:
        # Builds into <data dir>/models/house unless it is there, and registers "house".
        call_command("build_house_model", seed=house_seed)
        model = ModelSpec.objects.get(name=HOUSE_MODEL_NAME)
        model_dir = house_model_dir()
    else:
        model_dir = model_dir.resolve()
        if not (model_dir / "config.json").is_file():
            raise SystemExit(f"--model {model_dir}: no config.json, not a checkpoint directory")
        notes = _notes(model_dir / METADATA_FILE)
        model, _ = model_spec_register(
            name=f"{HOUSE_MODEL_NAME} ({model_dir})",
            backend=ModelSpec.Backend.TRANSFORMERS,
            location=str(model_dir),
            generation_params=HOUSE_GENERATION_PARAMS,
            description=house_description(notes),
            replace=True,
        )
    return model, _notes(Path(model.location) / METADATA_FILE)


def _notes(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def researcher() -> Any:
    from webapp.accounts.models import User
    from webapp.accounts.services import user_create

    return User.objects.filter(username=USERNAME).first() or user_create(
        username=USERNAME, password=os.urandom(16).hex(), role=User.Role.RESEARCHER
    )


def feedback_teacher() -> Any:
    from webapp.models_registry.models import ModelSpec
    from webapp.models_registry.services import model_spec_register

    teacher, _ = model_spec_register(
        name=TEACHER_NAME,
        backend=ModelSpec.Backend.SCRIPTED,
        location="feedback-teacher",
        description="Feedback computed from the verifier's details, never the answer.",
        replace=False,
    )
    return teacher


def didactic_protocol(max_turns: int) -> Any:
    from models_gpu.spec.protocol import ProtocolSpec
    from webapp.runs.models import Protocol
    from webapp.runs.services import protocol_create

    name = f"Didactic, {max_turns} turns (house SFT benchmark)"
    existing = Protocol.objects.filter(name=name).first()
    if existing is not None:
        assert existing.mode == Protocol.Mode.DIDACTIC and existing.max_turns == max_turns
        assert not existing.prompt_templates, "the benchmark's protocol keeps the default prompts"
        return existing
    return protocol_create(name=name, spec=ProtocolSpec("didactic", max_turns))


def distinct_arithmetic_tasks(
    count: int, *, seed: int, exclude: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """The generator's tasks in order, keeping the first ``count`` with a prompt not seen before
    and not in ``exclude`` (task i depends only on the seed and i, so drawing more changes none
    of those kept)."""
    from models_gpu.generators import generate

    drawn = 2 * count + 100
    tasks = generate("arithmetic", drawn, seed=seed, **TASK_KNOBS)
    kept: list[dict[str, Any]] = []
    seen = set(exclude)
    for task in tasks:
        if task["prompt"] not in seen:
            seen.add(task["prompt"])
            kept.append(task)
            if len(kept) == count:
                return kept
    raise SystemExit(f"only {len(kept)} distinct arithmetic tasks in {drawn} (seed {seed})")


def task_set_import(name: str, tasks: list[dict[str, Any]], *, user: Any) -> Any:
    """Through the real import path (the generator's records, Dialab's task mapping)."""
    from webapp.tasks.imports.mapping import build_dialab_task
    from webapp.tasks.imports.services import import_into_task_set
    from webapp.tasks.imports.sources import ImportSource

    source = ImportSource(
        records=lambda: enumerate(tasks, start=1),
        build=build_dialab_task,
        unit="task",
        total=len(tasks),
    )
    return import_into_task_set(source=source, task_set_name=name, created_by=user)


def prompts_of(task_set: Any) -> list[str]:
    return list(task_set.tasks.values_list("prompt", flat=True))


# --- Runs --------------------------------------------------------------------------------------


def play(run: Any) -> Any:
    """Play an evaluation run in this process, as a worker does; stop on failure."""
    from webapp.runs.models import Run
    from workers.evaluation import execute_evaluation

    run.refresh_from_db()
    if run.status == Run.Status.QUEUED:
        execute_evaluation(run.pk, worker="house-sft-benchmark")
        run.refresh_from_db()
    if run.status != Run.Status.SUCCEEDED:
        raise SystemExit(f"run {run.pk} ({run.name}) ended {run.status}: {run.error}")
    return run


def accuracy_table(runs: Sequence[Any]) -> dict[int, list[Any]]:
    from webapp.runs.selectors import runs_accuracy_by_turn

    return {pk: curve.points for pk, curve in runs_accuracy_by_turn(runs=list(runs)).items()}


def solved_by_turn_per_task(run: Any, max_turns: int) -> dict[int, list[int]]:
    """task id -> [dialogues solved by turn k for k = 1..T] and, last, the dialogue count."""
    from webapp.dialogues.models import Dialogue

    per_task: dict[int, list[int]] = {}
    rows = Dialogue.objects.filter(run=run).values_list("task_id", "first_correct_turn")
    for task_id, first_correct in rows:
        counts = per_task.setdefault(task_id, [0] * (max_turns + 1))
        counts[max_turns] += 1
        if first_correct is not None:
            for k in range(first_correct, max_turns + 1):
                counts[k - 1] += 1
    return per_task


def snapshot_composition(path: str) -> dict[str, int]:
    """What the snapshot trains on: student turns, of which correct and wrong attempts."""
    counts = {"dialogues": 0, "student_turns": 0, "correct": 0, "wrong": 0, "unverified": 0}
    first_correct: dict[int, int] = {}
    with open(path, encoding="utf-8") as snapshot:
        for line in snapshot:
            dialogue = json.loads(line)
            counts["dialogues"] += 1
            for turn in dialogue["turns"]:
                if turn["role"] != "student":
                    continue
                counts["student_turns"] += 1
                verdict = turn["is_correct"]
                counts["correct" if verdict else "unverified" if verdict is None else "wrong"] += 1
                if verdict:
                    first_correct[turn["round"]] = first_correct.get(turn["round"], 0) + 1
    for round_number, solved in sorted(first_correct.items()):
        counts[f"solved_in_round_{round_number}"] = solved
    return counts


def _interval(gap: Any) -> str:
    if gap.low is None or gap.high is None:
        return gap.note
    return f"[{gap.low:.4f}, {gap.high:.4f}]"


def _gap(gap: Any) -> str:
    return f"{100 * gap.value:+6.1f} pts {_interval(gap)}"


def _pct(value: float) -> str:
    return f"{100 * value:5.1f}%"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    clock = Clock()
    clock.time("migrate", setup_django, args.data_dir)

    from django.conf import settings

    from models_gpu.house.corpus import is_held_out
    from models_gpu.spec.training import TrainingConfig
    from webapp.models_registry.models import ModelSpec
    from webapp.runs.models import MetricPoint, Run
    from webapp.runs.selectors import runs_compared
    from webapp.runs.services import evaluation_config, evaluation_run_create
    from webapp.training.services import snapshot_create, training_run_config, training_run_create
    from workers.training import execute_training

    database = settings.DATABASES["default"]
    print(f"data dir {settings.DATA_DIR}; database {database['ENGINE']} {database['NAME']}")
    user = researcher()
    house, notes = clock.time("house model", house_model, args.model, args.house_seed)
    built = notes.get("training", {})
    print(
        f"house model: {house.name} at {house.location}; build seed "
        f"{built.get('seed')}, steps {built.get('steps')}, "
        f"build {notes.get('build_seconds')} s, one-turn accuracy when built "
        f"{notes.get('one_turn_accuracy')}, didactic 2-digit by turn "
        f"{notes.get('didactic_2_digit_accuracy_by_turn')}"
    )
    teacher = feedback_teacher()
    protocol = didactic_protocol(args.max_turns)
    max_turns = args.max_turns

    # Seeds: every one derived from --seed, none shared between the two task sets.
    train_task_seed, held_out_task_seed = 10_000 + 2 * args.seed, 10_001 + 2 * args.seed
    collect_seed, eval_seed, train_seed = 3 * args.seed, 3 * args.seed + 1, 3 * args.seed + 2
    stamp = time.strftime("%Y%m%d-%H%M%S")

    train_tasks = distinct_arithmetic_tasks(args.train_tasks, seed=train_task_seed)
    held_out = distinct_arithmetic_tasks(
        args.held_out_tasks,
        seed=held_out_task_seed,
        exclude=frozenset(task["prompt"] for task in train_tasks),
    )
    train_set = task_set_import(
        f"house SFT train (arithmetic 2-digit +-, seed {train_task_seed}, {stamp})",
        train_tasks,
        user=user,
    )
    held_out_set = task_set_import(
        f"house SFT held out (arithmetic 2-digit +-, seed {held_out_task_seed}, {stamp})",
        held_out,
        user=user,
    )
    train_prompts, held_out_prompts = prompts_of(train_set), prompts_of(held_out_set)
    overlap = set(train_prompts) & set(held_out_prompts)
    assert not overlap, f"held-out prompts found in the training set: {sorted(overlap)[:5]}"
    assert len(set(train_prompts)) == len(train_prompts) == args.train_tasks
    assert len(set(held_out_prompts)) == len(held_out_prompts) == args.held_out_tasks
    unseen = sum(is_held_out(prompt) for prompt in held_out_prompts)
    print(
        f"task sets: training #{train_set.pk} ({len(train_prompts)} distinct prompts, seed "
        f"{train_task_seed}), held out #{held_out_set.pk} ({len(held_out_prompts)} distinct, "
        f"seed {held_out_task_seed}); prompts in both: 0; held-out prompts that the house "
        f"pre-training corpus never shows (its own held-out bucket): {unseen}"
    )

    # 3. Collection on the training set.
    collection = evaluation_run_create(
        name=f"house SFT collection (seed {args.seed})",
        task_set=train_set,
        protocol=protocol,
        student=house,
        teacher=teacher,
        samples_per_task=args.samples,
        batch_size=args.eval_batch_size,
        seed=collect_seed,
        created_by=user,
    )
    collection = clock.time("collection (training set)", play, collection)
    collection_curve = accuracy_table([collection])[collection.pk]

    # 4. Snapshot, training, the two held-out evaluations.
    snapshot = snapshot_create(
        name=f"house SFT: solved dialogues of run {collection.pk}",
        filter_query=f"run={collection.pk}&outcome=solved",
        reader=user,
    )
    composition = snapshot_composition(snapshot.path)
    training = TrainingConfig(
        method="sft",
        learning_rate=args.learning_rate,
        epochs=args.epochs,
        max_steps=args.steps,
        batch_size=args.batch_size,
        finetuning="full",
        gradient_checkpointing=False,
        precision="float32",
        seed=train_seed,
        logging_steps=1,
        save_steps=100_000,
        keep_checkpoints=1,
    )
    evaluation = evaluation_config(
        task_set=held_out_set,
        protocol=protocol,
        student=house,
        teacher=teacher,
        samples_per_task=args.samples,
        batch_size=args.eval_batch_size,
        seed=eval_seed,
    )
    config = training_run_config(
        base=house, snapshot=snapshot, training=training, evaluation=evaluation
    )
    training_run = training_run_create(
        name=f"house SFT (seed {args.seed})", config=config, created_by=user
    )
    clock.time("training", execute_training, training_run.pk, worker="house-sft-benchmark")
    training_run.refresh_from_db()
    if training_run.status != Run.Status.SUCCEEDED:
        raise SystemExit(
            f"training run {training_run.pk} ended {training_run.status}: {training_run.error}"
        )
    trained = ModelSpec.objects.get(trained_by_run=training_run)
    base_eval = (
        Run.objects.filter(kind=Run.Kind.EVAL, config_hash=evaluation.config_hash())
        .exclude(status__in=[Run.Status.FAILED, Run.Status.CANCELLED])
        .order_by("created_at")
        .first()
    )
    trained_eval = Run.objects.filter(kind=Run.Kind.EVAL, student=trained).first()
    assert base_eval is not None and trained_eval is not None, "evaluations were not launched"
    base_eval = clock.time("held-out evaluation, base", play, base_eval)
    trained_eval = clock.time("held-out evaluation, trained", play, trained_eval)

    # 5. Report.
    losses = list(
        MetricPoint.objects.filter(run=training_run, name="loss")
        .order_by("step")
        .values_list("step", "value")
    )
    final_notes = _notes(Path(trained.location) / "dialab_training.json")
    accounting = training_run.accounting or {}
    curves = accuracy_table([base_eval, trained_eval])
    base_curve, trained_curve = curves[base_eval.pk], curves[trained_eval.pk]
    differences = runs_compared(baseline=base_eval, other=trained_eval)
    base_tasks = solved_by_turn_per_task(base_eval, max_turns)
    trained_tasks = solved_by_turn_per_task(trained_eval, max_turns)

    print()
    print("== Settings")
    print(
        f"tasks: arithmetic {TASK_KNOBS}; training {args.train_tasks} tasks, held out "
        f"{args.held_out_tasks}; {args.samples} dialogues per task; didactic protocol "
        f"#{protocol.pk}, {max_turns} turns; teacher: {teacher.name} (feedback-teacher); "
        f"student sampling {house.generation_params}"
    )
    print(
        f"seeds: --seed {args.seed}: training tasks {train_task_seed}, held-out tasks "
        f"{held_out_task_seed}, collection run {collect_seed}, held-out runs {eval_seed}, "
        f"training {train_seed}"
    )
    print(
        "training config:",
        json.dumps(
            {
                k: v
                for k, v in training.to_json().items()
                if k
                not in (
                    "critique_instruction",
                    "qpriming_decay",
                    "qpriming_question_template",
                    "lora_r",
                    "lora_alpha",
                    "lora_dropout",
                )
            },
            sort_keys=True,
        ),
    )
    print()
    print(
        f"== Collection: run {collection.pk} on the training set "
        f"({args.train_tasks} tasks x {args.samples})"
    )
    for point in collection_curve:
        a = point.accuracy
        print(
            f"  after turn {point.turn}: {_pct(a.rate)}  [{_pct(a.low)}, {_pct(a.high)}]  "
            f"({a.successes}/{a.total})"
        )
    print(
        f"snapshot #{snapshot.pk}: {snapshot.dialogue_count} solved dialogues, "
        f"{snapshot.student_turn_count} student turns (all trained by sft), of which "
        f"{composition['correct']} right answers, {composition['wrong']} wrong attempts, "
        f"{composition['unverified']} unverified; solved in round: "
        + ", ".join(
            f"{k.removeprefix('solved_in_round_')}: {v}"
            for k, v in composition.items()
            if k.startswith("solved_in_round_")
        )
    )
    print()
    print(f"== Training: run {training_run.pk} -> model #{trained.pk} {trained.name!r}")
    stats = final_notes.get("result", {}).get("dataset", {})
    print(
        f"examples {accounting.get('examples')} (dialogues read {stats.get('dialogues')}, "
        f"skipped {stats.get('skipped')}, truncated {stats.get('truncated')}), trained tokens "
        f"per epoch {accounting.get('trained_tokens_per_epoch')}, optimizer steps "
        f"{accounting.get('optimizer_steps')}, trainer wall "
        f"{accounting.get('wall_seconds')} s"
    )
    if losses:
        head = [value for _, value in losses[:5]]
        tail = [value for _, value in losses[-5:]]
        print(
            f"loss (per logged step): first {losses[0][1]:.4f} (step {losses[0][0]}), last "
            f"{losses[-1][1]:.4f} (step {losses[-1][0]}); mean of the first 5 "
            f"{sum(head) / len(head):.4f}, of the last 5 "
            f"{sum(tail) / len(tail):.4f}"
        )
        every = max(1, len(losses) // 10)
        print("loss curve:", ", ".join(f"{step}: {value:.3f}" for step, value in losses[::every]))
    print()
    print(
        f"== Held out: {args.held_out_tasks} tasks x {args.samples} dialogues; base run "
        f"{base_eval.pk}, trained run {trained_eval.pk} "
        "(same configuration, same seeds)"
    )
    print(f"{'k':>2}  {'base':>24}  {'trained':>24}  {'difference, 95% interval':>34}  p")
    for base, after, gap in zip(base_curve, trained_curve, differences, strict=True):
        b, t = base.accuracy, after.accuracy
        print(
            f"{base.turn:>2}  {_pct(b.rate)} [{_pct(b.low)}, {_pct(b.high)}]  "
            f"{_pct(t.rate)} [{_pct(t.low)}, {_pct(t.high)}]  {_gap(gap):>34}  {gap.p_value}"
        )
    print(
        f"(dialogues: base {base_curve[0].accuracy.total}, trained "
        f"{trained_curve[0].accuracy.total}; difference: {differences[0].method_description})"
    )
    for label, keep in (
        ("in the house pre-training corpus", False),
        ("never in it (house held-out bucket)", True),
    ):
        ids = set(
            held_out_set.tasks.filter(
                prompt__in=[p for p in held_out_prompts if is_held_out(p) == keep]
            ).values_list("pk", flat=True)
        )
        n = sum(base_tasks[t][max_turns] for t in ids if t in base_tasks)
        if n:
            b = sum(base_tasks[t][max_turns - 1] for t in ids if t in base_tasks) / n
            t_ = sum(trained_tasks[t][max_turns - 1] for t in ids if t in trained_tasks) / n
            print(
                f"held-out tasks {label}: {len(ids)} tasks, {n} dialogues each run: after "
                f"turn {max_turns} base {_pct(b)}, trained {_pct(t_)}"
            )
    print()
    print(
        "== Wall time (s): "
        + ", ".join(f"{k} {v}" for k, v in clock.phases.items())
        + f"; total {clock.total}"
    )
    print()
    headline: list[tuple[str, Any]] = []
    for base, after, gap in zip(base_curve, trained_curve, differences, strict=True):
        k = base.turn
        headline += [
            (f"base_accuracy_after_turn_{k}", round(base.accuracy.rate, 4)),
            (f"trained_accuracy_after_turn_{k}", round(after.accuracy.rate, 4)),
            (f"difference_after_turn_{k}", round(gap.value, 4)),
            (f"difference_after_turn_{k}_{gap.method}95", _interval(gap)),
            (f"difference_after_turn_{k}_p", gap.p_value),
        ]
    headline += [
        ("held_out_dialogues_per_model", base_curve[0].accuracy.total),
        (
            f"collection_accuracy_after_turn_{max_turns}",
            round(collection_curve[-1].accuracy.rate, 4),
        ),
        ("dialogues_trained_on", accounting.get("examples")),
        ("optimizer_steps", accounting.get("optimizer_steps")),
        ("learning_rate", args.learning_rate),
        ("train_loss_first", round(losses[0][1], 4) if losses else None),
        ("train_loss_last", round(losses[-1][1], 4) if losses else None),
        ("wall_seconds_collection", clock.phases.get("collection (training set)")),
        ("wall_seconds_training", clock.phases.get("training")),
        ("wall_seconds_eval_base", clock.phases.get("held-out evaluation, base")),
        ("wall_seconds_eval_trained", clock.phases.get("held-out evaluation, trained")),
        ("wall_seconds_total", clock.total),
    ]
    for name, value in headline:
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
