"""Benchmark training: the Dialab job's training throughput against a bare TRL run on the same
data and model, and the peak memory of its data path at 10k and 100k dialogues.

    .venv/bin/python benchmarks/training.py                            # everything, defaults
    .venv/bin/python benchmarks/training.py --model DIR --steps 500 --repeats 5
    .venv/bin/python benchmarks/training.py --skip-memory              # throughput only
    .venv/bin/python benchmarks/training.py --skip-throughput --sizes 1000 10000   # quick check
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/dialab \\
        .venv/bin/python benchmarks/training.py --skip-throughput

Everything is built in a temporary folder (``--work-dir`` to choose it, ``--keep`` to keep it):
a tiny untrained house model (``models_gpu.house.model.build_untrained``: a 2-layer Llama and a
BPE tokenizer trained on the synthetic dialogues' text, with the house chat template), unless
``--model DIR`` names a checkpoint, and synthetic arithmetic dialogues (1 to 4 rounds of student
attempts, each wrong one followed by the teacher's "too high" / "too low" feedback).

1. Throughput, in one process, on the same ``--dialogues`` dialogues and the same checkpoint:
     dialab    ``models_gpu.training.trainer.train`` as the worker's job calls it: SFT on the
               student's turns, full fine-tuning, float32, no gradient checkpointing, into a
               fresh output directory each time (so it encodes the dialogues each time);
     bare TRL  ``trl.SFTTrainer`` written by hand on the same rows (encoded once, up front, with
               Dialab's encoder into an in-memory ``datasets.Dataset`` of input_ids + labels,
               ``skip_prepare_dataset``) with the same hyperparameters: learning rate, batch,
               steps, seed, AdamW (``adamw_torch`` on CPU, as Dialab picks), linear schedule,
               bf16 and gradient checkpointing off, max_length, logging and checkpoint steps, and
               the same torch thread count while training (``devices.training_threads()`` on CPU).
   Both arms run under one stopwatch, attached to each trainer once it is built (for the Dialab
   arm by substituting, while ``train`` runs, a subclass of ``SFTTrainer`` that attaches it;
   nothing else changes): a ``TrainerCallback`` added last, and a wrapper around the trainer's
   data collator that counts each batch's non-padding tokens on the host (no device sync). It
   times the training steps: from ``on_train_begin`` to the ``on_step_end`` of the last step
   (every step, its logging and both arms' callbacks included; model loading, encoding, the
   final log, the end-of-training checkpoint that transformers saves with
   ``save_strategy="steps"``, and Dialab's ``final/`` excluded: they appear separately as
   "end s" and "call s"). Tokens per second: the non-padding input tokens of the batches
   trained over those seconds. Both arms train the same batches in the same order (same rows,
   same seed): their token counts and last losses must agree, and Dialab's own count
   (``include_num_input_tokens_seen``) must equal the stopwatch's; a WARNING line says when not.
   One short untimed warm-up run of each arm first, then ``--repeats`` timed runs of each,
   alternating (bare, dialab, dialab, bare, ...), and the medians. Headline: Dialab's median
   tokens/s over bare TRL's (goal: at least 0.9). Beside it, tokens per CPU second (this
   process's CPU time over the same steps): on CPU, with one training thread (half of 2 cores),
   it does not depend on how much of the machine other work leaves to the benchmark, so it is
   the steadier ratio on a shared machine (on a GPU it means little: the kernels run apart).

2. Peak memory of the data path, each step in a child process of its own (so its peak is its
   own), for each of ``--sizes`` dialogues (default 10,000 and 100,000), stored in a fresh
   database under the temporary folder (SQLite; or, when DATABASE_URL names PostgreSQL, a
   database ``<name>_training_bench`` beside it, created and dropped here) through
   ``dialogues_store`` (bulk inserts of 2,000 dialogues; the insert time is printed):
     snapshot  database -> snapshot file: ``webapp.training.services.snapshot_create`` with the
               filter ``run=<id>`` (as the training form freezes a selection);
     encode    snapshot file -> encoded Arrow dataset: ``trainer._dataset``, the trainer's data
               path, fed by a generator reading the snapshot line by line as
               ``models_gpu.training.launch`` feeds ``train`` in the worker's job.
   Each child first runs the same step on 10 dialogues (imports, template compilation, first
   queries: one-time costs), then measures the step's peak resident memory above what the
   process held just before it: "peak RSS" is the kernel's exact high-water mark (VmHWM, reset
   through /proc/self/clear_refs), which counts file pages mapped into the process (Arrow
   memory-maps its files); "peak anon" samples RssAnon every 10 ms (heap and buffers, no
   mapped files). "data MiB" is the size of what the step wrote (the snapshot file, the Arrow
   dataset): memory that grows with it would show as a ratio near the size ratio; streamed
   data gives a ratio near 1. Linux only (/proc). The encode step's RSS used to grow with the
   data (6x from 10k to 100k dialogues) while its anonymous memory did not: ``_dataset`` copied
   the Arrow file that ``Dataset.from_generator`` wrote with ``save_to_disk``, which read every
   page of the memory-mapped file back; the trainer now moves the file instead.
   Headlines: each step's peak growth (RSS and anon) in MiB at the smallest and the largest
   size, then the ratios largest / smallest.

The ``name: value`` lines at the end are the headline: absolute values, then the ratios last.

Caveat: on a small shared machine (2 cores, other work beside it) absolute speeds move by tens
of percent from run to run; only the ratios measured in the same run, alternating the arms, are
meaningful. Defaults (500 dialogues, 40 steps of batch 8, 3 repeats; 10k and 100k dialogues)
take about 15 minutes on 2 cores, two thirds of it encoding the 110,000 dialogues of part 2
(about 200 a second); ``--sizes 1000 10000`` takes a tenth of that.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# The table, not progress bars (the children inherit these).
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' bars follow the hub's
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

from models_gpu.spec.results import TurnRow  # noqa: E402
from models_gpu.spec.training import TrainingConfig, TrainingDialogue  # noqa: E402

MAX_ROUNDS = 4
STUDENT_SYSTEM = "You are a careful student. Solve the task and give the answer as a number."
TASKS_IN_DATABASE = 1000  # dialogue i plays task i % 1000, sample i // 1000
INSERT_BATCH = 2000
WARM_UP_DIALOGUES = 10
RESULT_PREFIX = "RESULT "
MIB = 1024 * 1024


# --- Synthetic arithmetic dialogues --------------------------------------------------------------


def problem(number: int) -> tuple[int, int]:
    """The operands of task ``number`` (two 2-digit numbers to add), the same in every process."""
    rng = random.Random(f"task-{number}")
    return rng.randint(10, 99), rng.randint(10, 99)


def task_prompt(left: int, right: int) -> str:
    return f"What is {left} + {right}?"


def dialogue_turns(left: int, right: int, rng: random.Random) -> tuple[TurnRow, ...]:
    """1 to ``MAX_ROUNDS`` rounds: each wrong attempt is followed by the teacher's feedback; the
    last attempt is right about two times in three."""
    answer = left + right
    rounds = rng.randint(1, MAX_ROUNDS)
    solved = rng.random() < 2 / 3
    turns: list[TurnRow] = []
    for round_number in range(1, rounds + 1):
        right_now = solved and round_number == rounds
        guess = answer if right_now else answer + rng.choice((-1, 1)) * rng.randint(1, 19)
        turns.append(
            TurnRow(
                index=len(turns),
                round=round_number,
                role="student",
                kind="attempt",
                text=f"{left} + {right} = {guess}. The answer is {guess}.",
                extracted_answer=str(guess),
                is_correct=right_now,
                score=float(right_now),
                verdict_details={"expected": str(answer)},
            )
        )
        if not right_now and round_number < rounds:
            direction = "high" if guess > answer else "low"
            turns.append(
                TurnRow(
                    index=len(turns),
                    round=round_number,
                    role="teacher",
                    kind="feedback",
                    text=f"That is not right: your answer is too {direction}. Check each "
                    "column again, carry where you must, and try once more.",
                    private_context={"reference": str(answer)},
                )
            )
    return tuple(turns)


def training_dialogues(count: int, seed: int = 0) -> list[TrainingDialogue]:
    """``count`` dialogues as the web side streams them to training."""
    dialogues = []
    for number in range(count):
        left, right = problem(number)
        dialogues.append(
            TrainingDialogue(
                dialogue_id=number + 1,
                student_system=STUDENT_SYSTEM,
                task_prompt=task_prompt(left, right),
                sharded=False,
                reference={"answer": str(left + right)},
                turns=dialogue_turns(left, right, random.Random(f"{seed}-{number}")),
            )
        )
    return dialogues


def corpus(dialogues: Sequence[TrainingDialogue]) -> list[str]:
    """Texts to train the tiny model's tokenizer on."""
    texts = [STUDENT_SYSTEM]
    for dialogue in dialogues:
        texts.append(dialogue.task_prompt)
        texts.extend(turn.text for turn in dialogue.turns)
    return texts


def tiny_model(out_dir: Path, dialogues: Sequence[TrainingDialogue]) -> Path:
    """An untrained house model (2 layers, hidden 128) whose tokenizer knows these texts."""
    from models_gpu.house.model import HouseConfig, build_untrained

    return build_untrained(out_dir, corpus(dialogues), HouseConfig(vocab_size=512))


# --- Part 1: training throughput ---------------------------------------------------------------


@dataclass(frozen=True)
class ArmRun:
    """One timed training run: ``tokens`` non-padding input tokens in ``steps`` optimizer steps
    over ``seconds`` (the steps only; ``cpu_seconds``: this process's CPU time over them);
    ``reported_tokens`` the trainer's own count (Dialab's
    ``include_num_input_tokens_seen``; 0 for bare TRL, which does not count); ``end_seconds``
    from the last step to the end of ``trainer.train`` (final log and checkpoint);
    ``call_seconds`` the whole call (model loading, for Dialab encoding and ``final/`` too);
    ``last_loss`` the last logged loss."""

    arm: str
    tokens: int
    reported_tokens: int
    steps: int
    seconds: float
    cpu_seconds: float
    end_seconds: float
    call_seconds: float
    last_loss: float | None

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds

    @property
    def tokens_per_cpu_second(self) -> float:
        return self.tokens / self.cpu_seconds


def stopwatch() -> Any:
    """A ``TrainerCallback`` that times the training steps and counts the non-padding tokens of
    the batches they trained; ``attach(trainer)`` installs it (see ``Stopwatch``)."""
    from transformers import TrainerCallback

    class Stopwatch(TrainerCallback):  # type: ignore[misc]
        """Steps: from ``on_train_begin`` to the last ``on_step_end``, in wall and in this
        process's CPU time. Tokens: the trainer's data
        collator is wrapped to count each batch's attention mask as it is made (on the host, so
        no device sync); the batches trained are the first ``steps x accumulation`` made (the
        data loader may make one more ahead)."""

        def __init__(self) -> None:
            self.began = self.last_step = self.ended = 0.0
            self.cpu_began = self.cpu_last_step = 0.0
            self.steps = self.accumulation = self.reported_tokens = 0
            self.batch_tokens: list[int] = []

        def attach(self, trainer: Any) -> None:
            collate = trainer.data_collator

            def counting_collate(examples: list[dict[str, Any]]) -> Any:
                batch = collate(examples)
                self.batch_tokens.append(int(batch["attention_mask"].sum()))
                return batch

            trainer.data_collator = counting_collate
            trainer.add_callback(self)

        @property
        def tokens(self) -> int:
            return sum(self.batch_tokens[: self.steps * self.accumulation])

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.accumulation = args.gradient_accumulation_steps
            self.began, self.cpu_began = time.perf_counter(), time.process_time()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.last_step, self.cpu_last_step = time.perf_counter(), time.process_time()
            self.steps = int(state.global_step)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.ended = time.perf_counter()
            self.reported_tokens = int(state.num_input_tokens_seen)  # 0 unless counted

    return Stopwatch()


@contextmanager
def sft_trainer_with(watch: Any) -> Iterator[None]:
    """While inside, ``trl.trainer.sft_trainer.SFTTrainer`` (which ``train`` imports when
    called) is a subclass that attaches ``watch`` once built; nothing else changes."""
    import trl.trainer.sft_trainer as sft_module

    original = sft_module.SFTTrainer

    class WatchedSFTTrainer(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            watch.attach(self)

    sft_module.SFTTrainer = WatchedSFTTrainer  # type: ignore[misc]
    try:
        yield
    finally:
        sft_module.SFTTrainer = original  # type: ignore[misc]


def sft_config(args: argparse.Namespace, steps: int) -> TrainingConfig:
    """The Dialab job's configuration for this benchmark."""
    return TrainingConfig(
        method="sft",
        learning_rate=args.learning_rate,
        max_steps=steps,
        batch_size=args.batch_size,
        max_length=args.max_length,
        finetuning="full",
        gradient_checkpointing=False,
        precision="float32",
        device=args.device,
        seed=args.seed,
        logging_steps=args.logging_steps,
        save_steps=args.save_steps,
    )


def arm_run(arm: str, watch: Any, call_seconds: float, last_loss: float | None) -> ArmRun:
    return ArmRun(
        arm=arm,
        tokens=watch.tokens,
        reported_tokens=watch.reported_tokens,
        steps=watch.steps,
        seconds=watch.last_step - watch.began,
        cpu_seconds=watch.cpu_last_step - watch.cpu_began,
        end_seconds=watch.ended - watch.last_step,
        call_seconds=call_seconds,
        last_loss=last_loss,
    )


def run_dialab(
    config: TrainingConfig, model_dir: Path, dialogues: Sequence[TrainingDialogue], work: Path
) -> ArmRun:
    """The Dialab job: ``train`` into a fresh output directory."""
    from models_gpu.training.trainer import train

    out = Path(tempfile.mkdtemp(prefix="dialab-", dir=work))
    watch = stopwatch()
    started = time.perf_counter()
    try:
        with sft_trainer_with(watch):
            result = train(config, base_model=model_dir, examples=dialogues, output_dir=out)
        return arm_run("dialab", watch, time.perf_counter() - started, result.loss_last)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def encoded_rows(
    config: TrainingConfig, model_dir: Path, dialogues: Sequence[TrainingDialogue]
) -> Any:
    """The dialogues encoded once with Dialab's encoder, as an in-memory ``datasets.Dataset``
    of input_ids + labels (the dialogues with nothing to train left out, as Dialab does)."""
    from datasets import Dataset  # type: ignore[import-untyped]
    from transformers import AutoTokenizer

    from models_gpu.training.encode import encode_for_config

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoded = [encode_for_config(tokenizer, dialogue, config) for dialogue in dialogues]
    kept = [example for example in encoded if example.trained_tokens]
    return Dataset.from_dict(
        {
            "input_ids": [example.input_ids for example in kept],
            "labels": [example.labels for example in kept],
        }
    )


def run_bare_trl(config: TrainingConfig, model_dir: Path, rows: Any, work: Path) -> ArmRun:
    """``SFTTrainer`` by hand on pre-tokenized rows, with the Dialab arm's hyperparameters."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, set_seed
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    from models_gpu.devices import resolve_device, training_threads

    out = Path(tempfile.mkdtemp(prefix="bare-", dir=work))
    device = resolve_device(config.device)
    watch = stopwatch()
    started = time.perf_counter()
    try:
        tokenizer = AutoTokenizer.from_pretrained(model_dir)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        set_seed(config.seed)
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        arguments = SFTConfig(
            output_dir=str(out),
            max_steps=config.max_steps,
            per_device_train_batch_size=config.batch_size,
            learning_rate=config.learning_rate,
            lr_scheduler_type=config.lr_scheduler,
            weight_decay=config.weight_decay,
            optim="adamw_torch_fused" if device.type == "cuda" else "adamw_torch",
            seed=config.seed,
            bf16=False,
            gradient_checkpointing=False,
            use_cpu=device.type == "cpu",
            max_length=config.max_length,
            dataset_kwargs={"skip_prepare_dataset": True},
            logging_steps=config.logging_steps,
            save_steps=config.save_steps,
            report_to="none",
            disable_tqdm=True,
        )
        trainer = SFTTrainer(
            model=model,
            args=arguments,
            train_dataset=rows,
            processing_class=tokenizer,
        )
        trainer.remove_callback(PrinterCallback)  # the table, not a line per log
        watch.attach(trainer)
        threads = torch.get_num_threads()
        if device.type == "cpu":
            torch.set_num_threads(training_threads())
        try:
            trainer.train()
        finally:
            torch.set_num_threads(threads)
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        return arm_run(
            "bare TRL", watch, time.perf_counter() - started, losses[-1] if losses else None
        )
    finally:
        shutil.rmtree(out, ignore_errors=True)


def alternating_order(repeats: int) -> list[str]:
    """bare, dialab, dialab, bare, bare, dialab, ...: each arm as often first as second."""
    order: list[str] = []
    for repeat in range(repeats):
        pair = ["bare", "dialab"] if repeat % 2 == 0 else ["dialab", "bare"]
        order.extend(pair)
    return order


def consistency_problems(runs: dict[str, list[ArmRun]]) -> list[str]:
    """What shows that the arms did not train the same batches, or that the stopwatch's token
    count is not Dialab's own."""
    every = runs["bare"] + runs["dialab"]
    problems = []
    if len({run.tokens for run in every}) > 1:
        problems.append(f"token counts differ: {sorted({run.tokens for run in every})}")
    if len({run.last_loss for run in every}) > 1:
        problems.append(f"last losses differ: {sorted({str(run.last_loss) for run in every})}")
    problems += [
        f"Dialab counted {run.reported_tokens} tokens, the stopwatch {run.tokens}"
        for run in runs["dialab"]
        if run.reported_tokens != run.tokens
    ]
    return problems


def measure_throughput(args: argparse.Namespace, model_dir: Path, work: Path) -> dict[str, float]:
    """Warm up both arms, run them alternately, print the runs and the medians."""
    dialogues = training_dialogues(args.dialogues, seed=args.seed)
    config = sft_config(args, args.steps)
    rows = encoded_rows(config, model_dir, dialogues)
    warm_up = sft_config(args, args.warmup_steps)
    print(f"warming up both arms ({args.warmup_steps} steps each)...", flush=True)
    run_bare_trl(warm_up, model_dir, rows, work)
    run_dialab(warm_up, model_dir, dialogues, work)

    arms: dict[str, Callable[[], ArmRun]] = {
        "bare": lambda: run_bare_trl(config, model_dir, rows, work),
        "dialab": lambda: run_dialab(config, model_dir, dialogues, work),
    }
    print(
        f"\ntraining throughput: {len(dialogues):,} dialogues ({len(rows):,} with a trained "
        f"token), {args.steps} steps of batch {args.batch_size}, max_length {args.max_length}, "
        f"float32, device {args.device}, logging every {args.logging_steps} steps"
    )
    print(RUN_HEADER)
    print("-" * len(RUN_HEADER))
    runs: dict[str, list[ArmRun]] = {"bare": [], "dialab": []}
    for number, arm in enumerate(alternating_order(args.repeats), start=1):
        gc.collect()
        run = arms[arm]()
        runs[arm].append(run)
        print(run_row(number, run), flush=True)
    return throughput_summary(runs)


RUN_HEADER = (
    f"{'run':>3} {'arm':<9} {'steps':>5} {'tokens':>9} {'steps s':>8} {'tokens/s':>9} "
    f"{'CPU s':>7} {'tokens/CPU s':>12} {'end s':>6} {'call s':>7} {'last loss':>10}"
)


def run_row(number: int, run: ArmRun) -> str:
    loss = f"{run.last_loss:.6f}" if run.last_loss is not None else "-"
    return (
        f"{number:>3} {run.arm:<9} {run.steps:>5} {run.tokens:>9,} {run.seconds:>8.2f} "
        f"{run.tokens_per_second:>9,.0f} {run.cpu_seconds:>7.2f} "
        f"{run.tokens_per_cpu_second:>12,.0f} {run.end_seconds:>6.2f} {run.call_seconds:>7.2f} "
        f"{loss:>10}"
    )


def throughput_summary(runs: dict[str, list[ArmRun]]) -> dict[str, float]:
    """Print the medians (and the best runs, the least disturbed by other work); return the
    headline values."""
    wall = {arm: [run.tokens_per_second for run in arm_runs] for arm, arm_runs in runs.items()}
    cpu = {arm: [run.tokens_per_cpu_second for run in arm_runs] for arm, arm_runs in runs.items()}
    median = {arm: statistics.median(values) for arm, values in wall.items()}
    median_cpu = {arm: statistics.median(values) for arm, values in cpu.items()}
    best = {arm: max(values) for arm, values in wall.items()}
    print(
        f"median tokens/s: bare TRL {median['bare']:,.0f}, dialab {median['dialab']:,.0f}, "
        f"ratio {median['dialab'] / median['bare']:.3f}; best runs: {best['bare']:,.0f} and "
        f"{best['dialab']:,.0f}, ratio {best['dialab'] / best['bare']:.3f}"
    )
    print(
        f"median tokens per CPU second: bare TRL {median_cpu['bare']:,.0f}, dialab "
        f"{median_cpu['dialab']:,.0f}, ratio {median_cpu['dialab'] / median_cpu['bare']:.3f}"
    )
    for problem_found in consistency_problems(runs):
        print(f"WARNING: {problem_found}")
    return {
        "bare_trl_tokens_per_second": median["bare"],
        "dialab_tokens_per_second": median["dialab"],
        "bare_trl_tokens_per_cpu_second": median_cpu["bare"],
        "dialab_tokens_per_cpu_second": median_cpu["dialab"],
        "dialab_vs_bare_trl_tokens_per_cpu_second": median_cpu["dialab"] / median_cpu["bare"],
        "dialab_vs_bare_trl_tokens_per_second": median["dialab"] / median["bare"],
    }


# --- Part 2: peak memory of the data path -------------------------------------------------------

STATUS_FIELDS = ("VmRSS", "VmHWM", "RssAnon")


def memory_status() -> dict[str, int]:
    """This process's resident memory figures in KiB (/proc/self/status)."""
    values: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in STATUS_FIELDS:
                values[name] = int(rest.split()[0])
    return values


class PeakMemory:
    """The peak resident memory of this process while the block runs, above what it held when
    the block began (MiB): ``rss`` the kernel's high-water mark (exact; mapped files count),
    ``anon`` anonymous memory sampled every ``interval`` seconds."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.rss = self.anon = 0.0
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        gc.collect()
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
            clear_refs.write("5")  # resets VmHWM to the current RSS
        self._start = memory_status()
        self._peak_anon = self._start["RssAnon"]
        self._sampler.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self._peak_anon = max(self._peak_anon, memory_status()["RssAnon"])

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._sampler.join()
        end = memory_status()
        self.rss = (end["VmHWM"] - self._start["VmRSS"]) / 1024
        self.anon = (max(self._peak_anon, end["RssAnon"]) - self._start["RssAnon"]) / 1024


def setup_django(data_dir: Path) -> None:
    """Settings for this process and the children: the temporary data folder, DEBUG off."""
    os.environ["DIALAB_DATA_DIR"] = str(data_dir)
    os.environ["DEBUG"] = "false"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    import django

    django.setup()


def bench_database_url(url: str) -> str:
    """The benchmark's own PostgreSQL database, beside the one ``url`` names (never that one)."""
    parts = urlsplit(url)
    name = f"{parts.path.lstrip('/') or 'dialab'}_training_bench"
    return urlunsplit(parts._replace(path=f"/{name}"))


def recreate_postgres(url: str, *, create: bool) -> None:
    """Drop the database ``url`` names, and create it again when ``create``."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    admin = urlunsplit(urlsplit(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if create:
            connection.execute(f'CREATE DATABASE "{name}"')


def migrate() -> None:
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=os.environ, check=True
    )


def create_run() -> tuple[int, str]:
    """A researcher, a task set of ``TASKS_IN_DATABASE`` sums, the scripted models, a didactic
    protocol and a finished run with its frozen configuration; returns (run id, username)."""
    from webapp.accounts.models import User
    from webapp.models_registry.models import ModelSpec
    from webapp.runs.models import Protocol, Run
    from webapp.runs.services import evaluation_config
    from webapp.tasks.models import Task, TaskSet

    username = "training-bench"
    User.objects.create_user(username, password="training-bench-1", role="researcher")
    task_set = TaskSet.objects.create(name="training bench sums")
    Task.objects.bulk_create(
        Task(
            task_set=task_set,
            position=number,
            prompt=task_prompt(*problem(number)),
            reference={"answer": str(sum(problem(number)))},
            verifier_kind="numeric",
            domain="arithmetic",
        )
        for number in range(TASKS_IN_DATABASE)
    )
    student = ModelSpec.objects.create(
        name="bench student", backend="scripted", location="arithmetic-student"
    )
    teacher = ModelSpec.objects.create(
        name="bench teacher", backend="scripted", location="feedback-teacher"
    )
    protocol = Protocol.objects.create(name="bench didactic", max_turns=MAX_ROUNDS)
    config = evaluation_config(
        task_set=task_set, protocol=protocol, student=student, teacher=teacher, check=False
    )
    run = Run.objects.create(
        name="training bench",
        task_set=task_set,
        student=student,
        teacher=teacher,
        protocol=protocol,
        config=config.to_json(),
        config_hash=config.config_hash(),
        status="succeeded",
    )
    return run.pk, username


def store_dialogues(run_id: int, start: int, stop: int) -> int:
    """Store dialogues ``start`` .. ``stop - 1`` of the run (``dialogues_store``, the worker's
    bulk insert, ``INSERT_BATCH`` at a time); returns the turns stored."""
    from models_gpu.spec.results import DialogueRow
    from webapp.runs.models import Run
    from webapp.runs.services import dialogues_store

    task_ids = list(
        Run.objects.get(pk=run_id).task_set.tasks.order_by("position").values_list("pk", flat=True)
    )
    turns = 0
    for first in range(start, stop, INSERT_BATCH):
        rows = []
        for number in range(first, min(first + INSERT_BATCH, stop)):
            position = number % TASKS_IN_DATABASE
            dialogue = dialogue_turns(*problem(position), random.Random(f"db-{number}"))
            correct = [turn.round for turn in dialogue if turn.is_correct]
            rows.append(
                DialogueRow(
                    task_id=task_ids[position],
                    sample_index=number // TASKS_IN_DATABASE,
                    seed=number,
                    outcome="solved" if correct else "unsolved",
                    first_correct_turn=correct[0] if correct else None,
                    num_turns=dialogue[-1].round,
                    end_reason="solved" if correct else "max_turns",
                    turns=dialogue,
                )
            )
            turns += len(dialogue)
        dialogues_store(run_id=run_id, dialogues=rows)
    return turns


def child(mode: str, options: dict[str, str]) -> dict[str, Any]:
    """Run one measurement in a child process; its result (the child's last output line)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", mode]
    command += ["--child-options", json.dumps(options)]
    completed = subprocess.run(
        command, cwd=ROOT, env=os.environ, stdout=subprocess.PIPE, text=True, check=True
    )
    lines = [line for line in completed.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if not lines:
        raise RuntimeError(f"the {mode} child printed no result:\n{completed.stdout}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix(RESULT_PREFIX))
    return result


def child_snapshot(options: dict[str, str]) -> dict[str, Any]:
    """Database -> snapshot file (``snapshot_create``), after a warm-up on a few dialogues."""
    setup_django(Path(os.environ["DIALAB_DATA_DIR"]))
    from itertools import islice

    from webapp.accounts.models import User
    from webapp.training import services
    from webapp.training.selectors import selected_dialogues
    from webapp.training.selectors import training_dialogues as stored_dialogues
    from webapp.transcripts.filters import DialogueFilters

    reader = User.objects.get(username=options["reader"])
    chosen = selected_dialogues(filters=DialogueFilters(run_id=int(options["run"])), reader=reader)
    _, warm_up = services._write_snapshot(islice(stored_dialogues(chosen), WARM_UP_DIALOGUES))
    warm_up.unlink()
    started = time.perf_counter()
    with PeakMemory() as peak:
        snapshot = services.snapshot_create(
            name="training bench", filter_query=f"run={options['run']}", reader=reader
        )
    return {
        "seconds": time.perf_counter() - started,
        "dialogues": snapshot.dialogue_count,
        "turns": snapshot.turn_count,
        "path": snapshot.path,
        "data_mib": Path(snapshot.path).stat().st_size / MIB,
        "peak_rss_mib": peak.rss,
        "peak_anon_mib": peak.anon,
    }


def snapshot_reader(path: Path, limit: int | None = None) -> Callable[[], Iterator[Any]]:
    """What the worker's job hands ``train``: a function reading the snapshot line by line
    (as ``models_gpu.training.launch.run`` does), optionally only its first ``limit`` lines."""

    def dialogues() -> Iterator[TrainingDialogue]:
        with path.open(encoding="utf-8") as snapshot:
            for number, line in enumerate(snapshot):
                if limit is not None and number >= limit:
                    return
                yield TrainingDialogue.from_json(json.loads(line))

    return dialogues


def child_encode(options: dict[str, str]) -> dict[str, Any]:
    """Snapshot file -> encoded Arrow dataset (the trainer's ``_dataset``), after a warm-up."""
    from transformers import AutoTokenizer

    from models_gpu.training import trainer

    snapshot, out = Path(options["snapshot"]), Path(options["out"])
    tokenizer = AutoTokenizer.from_pretrained(options["model"])
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    config = TrainingConfig(method="sft", max_length=int(options["max_length"]))
    warm_up = snapshot_reader(snapshot, WARM_UP_DIALOGUES)
    trainer._dataset(out / "warm-up", tokenizer, config, warm_up, None)
    started = time.perf_counter()
    with PeakMemory() as peak:
        dataset, stats = trainer._dataset(
            out / "measured", tokenizer, config, snapshot_reader(snapshot), None
        )
    seconds = time.perf_counter() - started
    size = sum(path.stat().st_size for path in (out / "measured").rglob("*") if path.is_file())
    return {
        "seconds": seconds,
        "dialogues": stats.dialogues,
        "examples": len(dataset),
        "tokens": stats.tokens,
        "data_mib": size / MIB,
        "peak_rss_mib": peak.rss,
        "peak_anon_mib": peak.anon,
    }


def short_count(count: int) -> str:
    """10000 -> "10k", 1500 -> "1500"."""
    return f"{count // 1000}k" if count % 1000 == 0 and count >= 1000 else str(count)


@contextmanager
def bench_database(work: Path) -> Iterator[str]:
    """A fresh database for this run (SQLite under ``work``, or PostgreSQL beside
    DATABASE_URL's), migrated, with Django set up in this process; yields its description."""
    original = os.environ.get("DATABASE_URL", "")
    postgres = original.startswith(("postgres://", "postgresql://"))
    if postgres:
        url = bench_database_url(original)
        recreate_postgres(url, create=True)
        os.environ["DATABASE_URL"] = url
    setup_django(work / "data")
    try:
        migrate()
        from django.db import connection

        yield f"{connection.vendor} database {connection.settings_dict['NAME']}"
    finally:
        if postgres:
            from django.db import connections

            connections.close_all()
            recreate_postgres(os.environ["DATABASE_URL"], create=False)


def measure_memory(args: argparse.Namespace, model_dir: Path, work: Path) -> dict[str, float]:
    """Fill the database size by size; measure both steps in children at each size."""
    sizes = sorted(set(args.sizes))
    results: list[tuple[str, int, dict[str, Any]]] = []
    with bench_database(work) as description:
        run_id, reader = create_run()
        from webapp.training.selectors import CHUNK

        print(f"\ndata path memory: {description}; the selector reads {CHUNK} dialogues a query")
        stored = 0
        for size in sizes:
            started = time.perf_counter()
            turns = store_dialogues(run_id, stored, size)
            print(
                f"stored dialogues {stored + 1:,}..{size:,} ({turns:,} turns) with bulk inserts "
                f"in {time.perf_counter() - started:.1f} s",
                flush=True,
            )
            stored = size
            snapshot = child("snapshot", {"run": str(run_id), "reader": reader})
            results.append(("snapshot", size, snapshot))
            out = Path(tempfile.mkdtemp(prefix=f"encode-{size}-", dir=work))
            options = {
                "snapshot": snapshot["path"],
                "model": str(model_dir),
                "out": str(out),
                "max_length": str(args.max_length),
            }
            results.append(("encode", size, child("encode", options)))
            shutil.rmtree(out, ignore_errors=True)
            Path(snapshot["path"]).unlink(missing_ok=True)
    header = (
        f"{'step':<9} {'dialogues':>9} {'seconds':>8} {'dialogues/s':>11} {'data MiB':>9} "
        f"{'peak RSS MiB':>12} {'peak anon MiB':>13}"
    )
    print(header)
    print("-" * len(header))
    for step, _size, result in sorted(results, key=lambda item: (item[0] != "snapshot", item[1])):
        print(
            f"{step:<9} {result['dialogues']:>9,} {result['seconds']:>8.1f} "
            f"{result['dialogues'] / result['seconds']:>11,.0f} {result['data_mib']:>9.1f} "
            f"{result['peak_rss_mib']:>12.1f} {result['peak_anon_mib']:>13.1f}"
        )
    return memory_headline(results, sizes[0], sizes[-1])


def memory_headline(
    results: list[tuple[str, int, dict[str, Any]]], smallest: int, largest: int
) -> dict[str, float]:
    """Peak growth at the smallest and largest size, then largest / smallest, per step and
    measure (``rss``: the exact high-water mark; ``anon``: sampled, mapped files excluded)."""
    small, large = short_count(smallest), short_count(largest)
    peaks = {(step, size): result for step, size, result in results}
    values: dict[str, float] = {}
    ratios: dict[str, float] = {}
    for step in ("snapshot", "encode"):
        for kind in ("rss", "anon"):
            at_small = peaks[(step, smallest)][f"peak_{kind}_mib"]
            at_large = peaks[(step, largest)][f"peak_{kind}_mib"]
            values[f"{step}_peak_{kind}_mib_{small}"] = at_small
            values[f"{step}_peak_{kind}_mib_{large}"] = at_large
            ratios[f"{step}_peak_{kind}_ratio_{large}_vs_{small}"] = at_large / at_small
    return {**values, **ratios}


# --- Command line -------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a checkpoint directory (default: build one)")
    parser.add_argument("--work-dir", type=Path, help="default: a new temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--dialogues", type=int, default=500, help="throughput: dialogues")
    parser.add_argument("--steps", type=int, default=40, help="throughput: optimizer steps")
    parser.add_argument("--warmup-steps", type=int, default=5, help="untimed, each arm")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each arm")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--logging-steps", type=int, default=10, help="the form's default")
    parser.add_argument(
        "--save-steps", type=int, default=500, help="checkpoint every (the form's default)"
    )
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="memory: dialogues"
    )
    parser.add_argument("--child", choices=("snapshot", "encode"), help=argparse.SUPPRESS)
    parser.add_argument("--child-options", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name in ("dialogues", "steps", "warmup_steps", "repeats", "batch_size"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if len(set(args.sizes)) < 2 or min(args.sizes) < WARM_UP_DIALOGUES:
        parser.error(f"--sizes needs two distinct sizes of at least {WARM_UP_DIALOGUES}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        measure = child_snapshot if args.child == "snapshot" else child_encode
        print(RESULT_PREFIX + json.dumps(measure(json.loads(args.child_options))), flush=True)
        return
    started = time.perf_counter()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="dialab-training-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    headline: dict[str, float] = {}
    try:
        model_dir = args.model
        if model_dir is None:
            model_dir = tiny_model(work / "model", training_dialogues(args.dialogues, args.seed))
        model_dir = model_dir.resolve()
        print(f"model: {model_dir}; work folder: {work}; {os.cpu_count()} CPUs", flush=True)
        if not args.skip_throughput:
            headline.update(measure_throughput(args, model_dir, work))
        if not args.skip_memory:
            headline.update(measure_memory(args, model_dir, work))
    finally:
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nwall time: {time.perf_counter() - started:.0f} s\n")
    ratios = [name for name in headline if "_ratio_" in name or "_vs_" in name]
    for name in [name for name in headline if name not in ratios] + ratios:
        print(f"{name}: {headline[name]:.3f}")


if __name__ == "__main__":
    main()
