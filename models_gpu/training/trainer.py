"""Fine-tune a student on stored dialogues: TRL's ``SFTTrainer`` on Dialab's own masks.

``train`` encodes the dialogues (``encode``: one example per dialogue, the method's layout and
mask, cut to ``max_length``), writes them to an Arrow dataset on disk as they stream in (never
all in memory), and hands TRL pre-tokenized ``input_ids`` + ``labels`` rows, which it uses as
they are (``skip_prepare_dataset``: no re-tokenizing, no re-masking, no truncation). Every TRL
and transformers default that changes a result is set from the configuration (see ``_arguments``;
TRL turns on bfloat16 and gradient checkpointing by default, even on CPU).

Where things go, under ``output_dir``:
    training_job.json   the configuration, its hash and the base model: a later call with
                        another configuration or base refuses to resume here (ValueError).
    dataset/            the encoded examples (Arrow files, memory-mapped) and
                        dataset_stats.json; written once, reused when resuming, so a resumed
                        run trains on the very same rows.
    checkpoint-N/       resumable checkpoints (weights or LoRA adapter, optimizer, scheduler,
                        random states, step), every ``save_steps`` steps and when cancelled; the
                        newest ``keep_checkpoints`` are kept, and none once final/ is written.
                        A LoRA checkpoint holds only the adapter (merge it with
                        ``peft.AutoPeftModelForCausalLM``).
    final/              the trained model as a plain Hugging Face checkpoint (LoRA merged into
                        the weights), its tokenizer, and dialab_training.json (configuration,
                        base model, summary). Written only when training completes, under a
                        temporary name renamed at the end, so its presence means complete.

Resume: when ``output_dir`` holds ``checkpoint-*`` directories, training continues from the
newest (transformers restores weights, optimizer, scheduler and random states, and skips the
batches of the current epoch already trained; the sampler's order is seeded per epoch), so a run
stopped at step k and resumed ends like an uninterrupted run (the tests check the data order and
the final weights).

Cancel: ``should_stop()`` is asked after every optimizer step; when it says yes, a checkpoint is
saved and training stops (``TrainResult.stopped``; no ``final/``); a later call resumes.
A call on an ``output_dir`` whose ``final/`` exists trains nothing and returns the stored result
(a worker that runs a finished job again, e.g. after a redelivery, costs nothing).

Device and precision (``models_gpu.devices``): "auto" trains on CUDA when there is one. Precision
"auto" is bfloat16 mixed precision where the hardware has bfloat16 (CUDA, or a CPU with
AVX512-BF16 / AMX), else float32; "bfloat16" is mixed precision too (float32 master weights),
except that LoRA then loads the frozen base in bfloat16. "cuda:N" makes GPU N this process's
current CUDA device. On CPU, torch uses ``devices.training_threads()`` threads while training.

All of this but the dataset is ``TrainerSession``'s, which online GRPO (``online.train_online``)
shares, with one callback reporting progress (``progress_callback``).
"""

from __future__ import annotations

import json
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from models_gpu.devices import resolve_device, training_autocast, training_threads
from models_gpu.spec.reports import DatasetStats, Report, StepReport, TrainResult
from models_gpu.spec.training import TrainingConfig, TrainingConfigError, TrainingDialogue
from models_gpu.training.encode import encode_stream
from models_gpu.training.qpriming import QuestionWriter

if TYPE_CHECKING:
    import torch

FINAL_DIR = "final"
DATASET_DIR = "dataset"
JOB_FILE = "training_job.json"
STATS_FILE = "dataset_stats.json"
METADATA_FILE = "dialab_training.json"
CHECKPOINT_PREFIX = "checkpoint-"
ARROW_PREFIX = "data-"
MAX_GRAD_NORM = 1.0

LogCallback = Callable[[Report], None]
"""``on_log(report)``: each logged step's ``StepReport`` (and, online, each ``HeldOutReport``)."""
Examples = Iterable[TrainingDialogue] | Callable[[], Iterable[TrainingDialogue]]


def train(
    config: TrainingConfig,
    *,
    base_model: str | Path,
    examples: Examples,
    output_dir: str | Path,
    on_log: LogCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
    write_question: QuestionWriter | None = None,
) -> TrainResult:
    """Fine-tune the checkpoint in ``base_model`` (a local directory) on ``examples`` under
    ``config``; see the module docstring for what goes where, resuming and cancelling.

    examples: the dialogues, or a function returning them (called only when the dataset is not
        on disk yet, so a resumed run does not read them again); they are streamed to disk.
    write_question: Q-priming's question writer (default: the configuration's template); one
        with a ``close()`` method is closed once the dataset is written.
    Raises ``TrainingConfigError`` for a bad configuration, ``ChatTemplateError`` when the
    model's chat template cannot express the method's layout, ValueError when ``output_dir``
    belongs to another configuration or when no dialogue leaves a token to train.
    """
    problems = config.problems()
    if problems:
        raise TrainingConfigError(problems)
    session = TrainerSession(
        config,
        base_model=base_model,
        output_dir=output_dir,
        identity=config.to_json(),
        identity_hash=config.config_hash(),
        should_stop=should_stop,
    )
    if session.finished is not None:
        return session.finished
    from trl.trainer.sft_trainer import SFTTrainer

    tokenizer = session.start()
    # The main process writes the dataset; the others wait, then read what it wrote.
    with session.processes.main_process_first():
        dataset, stats = _dataset(session.out, tokenizer, config, examples, write_question)
    close_writer = getattr(write_question, "close", None)
    if close_writer is not None:  # a model writer lets its model go before training
        close_writer()
    trainer = SFTTrainer(
        model=session.load_model(),
        args=_arguments(config, session.arguments()),
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=session.peft_config(),
        callbacks=session.callbacks(progress_callback(on_log, Throughput())),
    )
    state = session.run(trainer)
    losses = logged(state, "loss")
    result = session.result(
        dataset=stats,
        loss_history=losses,
        loss_first=losses[0][1] if losses else None,
        loss_last=losses[-1][1] if losses else None,
    )
    summary = {
        "what": "A Dialab student fine-tuned on stored dialogues (models_gpu.training).",
        "global_step": result.global_step,
        "epoch": result.epoch,
        "dataset": asdict(stats),
        "loss_first": result.loss_first,
        "loss_last": result.loss_last,
    }
    return session.save(trainer, result, summary)


class TrainerSession:
    """One training in its output directory, the lifecycle every Dialab trainer shares (SFT:
    ``train``; online GRPO: ``online.train_online``); the trainer itself is the caller's.

    Made, it claims the directory for this training (``claim_output``: ``identity`` and its
    hash, and the base model) and reads what a finished run left there (``finished``: then
    there is nothing to do). ``start`` picks the device and loads the tokenizer;
    ``load_model`` finds the checkpoint to resume from and loads the base model; the trainer
    is built with ``arguments()``, ``peft_config()`` and ``callbacks(...)`` (the stop callback
    last); ``run`` trains; ``result`` is what it did; ``save`` writes ``final/`` (unless
    stopped) and times the whole call.

    Under ``accelerate launch`` (one process per GPU: launch.py) the main process claims the
    directory and writes the final model; the others wait for it (``processes``).
    """

    def __init__(
        self,
        training: TrainingConfig,
        *,
        base_model: str | Path,
        output_dir: str | Path,
        identity: Mapping[str, Any],
        identity_hash: str,
        should_stop: Callable[[], bool] | None,
    ) -> None:
        self.started = time.perf_counter()
        self.training = training
        self.base_model = base_model
        self.identity, self.identity_hash = identity, identity_hash
        self.out = Path(output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        from accelerate import PartialState

        self.processes = PartialState()
        with self.processes.main_process_first():
            claim_output(
                self.out, config=identity, config_hash=identity_hash, base_model=str(base_model)
            )
        self.finished = finished_summary(self.out, self.started)
        self.stopper = stop_callback(should_stop or (lambda: False))
        self.resume: Path | None = None
        self.stopped = False

    @property
    def lora(self) -> bool:
        return self.training.finetuning == "lora"

    def start(self) -> Any:
        """Pick the device (and precision); the base model's tokenizer."""
        self.device, self.bf16 = training_device(self.training)
        self.tokenizer = load_tokenizer(self.base_model)
        return self.tokenizer

    def load_model(self) -> Any:
        """The base model to train; the newest complete checkpoint is what ``run`` resumes."""
        self.resume = last_checkpoint(self.out)
        return load_model(self.base_model, self.training, self.bf16)

    def arguments(self) -> dict[str, Any]:
        return common_arguments(self.training, self.out, self.device, self.bf16)

    def peft_config(self) -> Any:
        return lora_config(self.training) if self.lora else None

    def callbacks(self, *callbacks: Any) -> list[Any]:
        """The trainer's callbacks: ``callbacks``, then the stop callback."""
        return [*callbacks, self.stopper]

    def run(self, trainer: Any) -> Any:
        """Train (from the checkpoint ``load_model`` found); the trainer's state at the end."""
        from transformers import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # on_log reports; nothing is printed
        state = run_trainer(trainer, self.device, self.resume)
        self.state = state
        self.stopped = bool(self.stopper.stopped) and state.global_step < state.max_steps
        return state

    def result(self, **figures: Any) -> TrainResult:
        """What ``run`` did, with the trainer's own ``figures`` (no final model yet)."""
        state = self.state
        return TrainResult(
            final_dir=None,
            stopped=self.stopped,
            resumed_from=str(self.resume) if self.resume else None,
            global_step=state.global_step,
            total_steps=state.max_steps,
            epoch=float(state.epoch or 0.0),
            wall_seconds=0.0,
            **figures,
        )

    def save(self, trainer: Any, result: TrainResult, summary: Mapping[str, Any]) -> TrainResult:
        """Unless it stopped on a cancel, the trained model in ``final/`` with ``summary`` (and
        the base model, the identity and the result a rerun returns); ``result`` with its
        final directory and this call's wall time."""
        if not result.stopped:
            final = self.out / FINAL_DIR
            result = replace(result, final_dir=str(final))
            if self.processes.is_main_process:
                written = {
                    **summary,
                    "base_model": str(self.base_model),
                    "config": dict(self.identity),
                    "config_hash": self.identity_hash,
                    "result": result.to_json(),
                }
                save_final(trainer, self.tokenizer, self.out, summary=written, lora=self.lora)
            self.processes.wait_for_everyone()
        return replace(result, wall_seconds=round(time.perf_counter() - self.started, 3))


def training_device(config: TrainingConfig) -> tuple[torch.device, bool]:
    """The device training runs on (made this process's current one when it is "cuda:N"), and
    whether it trains in bfloat16 mixed precision."""
    import torch

    device = resolve_device(config.device)
    if device.type == "cuda" and device.index is not None:
        torch.cuda.set_device(device.index)
    return device, use_bf16(config.precision, device)


def load_tokenizer(base_model: str | Path) -> Any:
    """The base model's tokenizer, padding with its end token when it names no pad token."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_model(base_model: str | Path, config: TrainingConfig, bf16: bool) -> Any:
    """The base model to train, seeded first (LoRA's initialisation draws from the seed); a
    LoRA base in bfloat16 when training is, else float32 master weights."""
    import torch
    from transformers import AutoModelForCausalLM, set_seed

    set_seed(config.seed)
    lora = config.finetuning == "lora"
    dtype = torch.bfloat16 if lora and bf16 else torch.float32
    return AutoModelForCausalLM.from_pretrained(base_model, dtype=dtype)


def run_trainer(trainer: Any, device: torch.device, resume: Path | None) -> Any:
    """``trainer.train()`` (from ``resume`` when given), on a CPU with training's thread count;
    the trainer's state when it ends."""
    import torch

    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(training_threads())
    try:
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    finally:
        torch.set_num_threads(threads)
    return trainer.state


def logged(state: Any, name: str) -> tuple[tuple[int, float], ...]:
    """(step, value) of every log entry of the trainer's ``state`` that has ``name``."""
    return tuple(
        (int(entry["step"]), float(entry[name]))
        for entry in state.log_history
        if name in entry and "step" in entry
    )


def finished_summary(out: Path, started: float) -> TrainResult | None:
    """The result of the run that already completed in ``out`` (its wall time this call's),
    or None."""
    path = out / FINAL_DIR / METADATA_FILE
    if not path.exists():
        return None
    stored = TrainResult.from_json(json.loads(path.read_text())["result"])
    return replace(stored, wall_seconds=round(time.perf_counter() - started, 3))


def use_bf16(precision: str, device: torch.device) -> bool:
    import torch

    if precision == "auto":
        return training_autocast(device) == torch.bfloat16
    return precision == "bfloat16"


def claim_output(
    out: Path, *, config: Mapping[str, Any], config_hash: str, base_model: str
) -> None:
    """Record which training ``out`` belongs to, or check that it is this one."""
    job = {"config": dict(config), "config_hash": config_hash, "base_model": base_model}
    path = out / JOB_FILE
    if path.exists():
        stored = json.loads(path.read_text())
        if stored.get("config_hash") != config_hash or stored.get("base_model") != base_model:
            raise ValueError(
                f"{out} holds a training run of another configuration or base model "
                f"(hash {stored.get('config_hash')}, base {stored.get('base_model')}): "
                "use a new output directory"
            )
        return
    path.write_text(json.dumps(job, indent=2, sort_keys=True) + "\n")


def _dataset(
    out: Path,
    tokenizer: Any,
    config: TrainingConfig,
    examples: Examples,
    write_question: QuestionWriter | None,
) -> tuple[Any, DatasetStats]:
    """The encoded examples on disk (built now, or as an earlier call left them)."""
    from datasets import (
        Dataset,
        Features,
        List,
        Value,
        disable_progress_bars,
    )

    # The build's counts are reported (DatasetStats); the library's bar would write a line per
    # chunk into the job's log and the miniature's report.
    disable_progress_bars()
    target = out / DATASET_DIR
    if not (target / STATS_FILE).exists():
        counts = {field: 0 for field in DatasetStats.__dataclass_fields__}
        # An error while encoding (a chat template that cannot express the layout) is raised
        # as itself below: datasets would wrap it, or report an empty split instead.
        failures: list[Exception] = []

        def rows() -> Iterable[dict[str, Any]]:
            try:
                yield from encoded_rows()
            except Exception as error:
                failures.append(error)

        def counted(dialogues: Iterable[TrainingDialogue]) -> Iterator[TrainingDialogue]:
            for dialogue in dialogues:
                counts["dialogues"] += 1
                yield dialogue

        def encoded_rows() -> Iterable[dict[str, Any]]:
            dialogues = counted(examples() if callable(examples) else examples)
            for dialogue, encoded in encode_stream(
                tokenizer, dialogues, config, write_question=write_question
            ):
                if encoded.trained_tokens == 0:
                    counts["skipped"] += 1
                    continue
                counts["examples"] += 1
                counts["truncated"] += encoded.truncated
                counts["trained_tokens"] += encoded.trained_tokens
                counts["tokens"] += len(encoded.input_ids)
                yield {
                    "dialogue_id": dialogue.dialogue_id,
                    "input_ids": encoded.input_ids,
                    "labels": encoded.labels,
                    "trained_tokens": encoded.trained_tokens,
                    "truncated": encoded.truncated,
                }

        features = Features(
            {
                "dialogue_id": Value("int64"),
                "input_ids": List(Value("int32")),
                "labels": List(Value("int32")),
                "trained_tokens": Value("int32"),
                "truncated": Value("bool"),
            }
        )
        scratch = out / f".dataset-{uuid.uuid4().hex}"
        building = out / f"{DATASET_DIR}.partial"
        try:
            try:
                # A fresh fingerprint: the generator is not hashed, no stale cache is reused.
                built = Dataset.from_generator(
                    rows, features=features, cache_dir=str(scratch), fingerprint=uuid.uuid4().hex
                )
            except Exception:
                if failures:
                    raise failures[0] from None
                if counts["examples"] == 0:  # datasets refuses an empty split
                    raise _nothing_to_train(counts["dialogues"], config) from None
                raise
            if failures:
                raise failures[0]
            if counts["examples"] == 0:
                raise _nothing_to_train(counts["dialogues"], config)
            # The Arrow files move rather than being copied (save_to_disk would read every page
            # back, so the process's resident memory would grow with the dataset).
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir()
            for number, cache in enumerate(built.cache_files):
                shutil.move(cache["filename"], building / f"{ARROW_PREFIX}{number:05d}.arrow")
            del built
            stats = DatasetStats(**counts)
            (building / STATS_FILE).write_text(json.dumps(asdict(stats), indent=2) + "\n")
            shutil.rmtree(target, ignore_errors=True)
            building.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    stats = DatasetStats(**json.loads((target / STATS_FILE).read_text()))
    return load_encoded_dataset(target), stats


def load_encoded_dataset(target: Path) -> Any:
    """The encoded examples in ``target``, memory-mapped, in the order they were written."""
    from datasets import Dataset, concatenate_datasets, load_from_disk

    if (target / "state.json").exists():  # written by save_to_disk, before the files moved
        return load_from_disk(str(target))
    parts = [Dataset.from_file(str(path)) for path in sorted(target.glob(f"{ARROW_PREFIX}*"))]
    return parts[0] if len(parts) == 1 else concatenate_datasets(parts)


def _nothing_to_train(dialogues: int, config: TrainingConfig) -> ValueError:
    return ValueError(
        f"none of the {dialogues} dialogue(s) has a token to train for the {config.method} "
        f"method (within max_length {config.max_length})"
    )


# transformers writes a checkpoint in place and this file last: a checkpoint without it was cut
# short (the worker was killed while saving) and cannot be resumed from.
CHECKPOINT_COMPLETE = "trainer_state.json"


def last_checkpoint(out: Path) -> Path | None:
    """The newest complete checkpoint; an incomplete one (a save cut short) is passed over."""
    steps = [
        (int(path.name.removeprefix(CHECKPOINT_PREFIX)), path)
        for path in out.glob(f"{CHECKPOINT_PREFIX}*")
        if path.is_dir()
        and path.name.removeprefix(CHECKPOINT_PREFIX).isdigit()
        and (path / CHECKPOINT_COMPLETE).is_file()
    ]
    return max(steps)[1] if steps else None


def common_arguments(
    config: TrainingConfig, out: Path, device: torch.device, bf16: bool
) -> dict[str, Any]:
    """The transformers ``TrainingArguments`` every Dialab trainer sets (SFT and GRPO)."""
    return {
        "output_dir": str(out),
        # How long.
        "num_train_epochs": config.epochs,
        "max_steps": config.max_steps or -1,
        # The optimizer and the schedule.
        "optim": "adamw_torch_fused" if device.type == "cuda" else "adamw_torch",
        "learning_rate": config.learning_rate,
        "lr_scheduler_type": config.lr_scheduler,
        "warmup_steps": config.warmup_ratio,  # a float below 1: a share of the steps
        "weight_decay": config.weight_decay,
        "max_grad_norm": MAX_GRAD_NORM,
        # Precision, device, memory (TRL defaults bf16 and gradient checkpointing to on).
        "bf16": bf16,
        "fp16": False,
        "use_cpu": device.type == "cpu",
        "gradient_checkpointing": config.gradient_checkpointing,
        # Seeds: initialisation, dropout, the data order.
        "seed": config.seed,
        "data_seed": config.seed,
        "dataloader_num_workers": 0,
        # Checkpoints and logs.
        "save_strategy": "steps",
        "save_steps": config.save_steps,
        "save_total_limit": config.keep_checkpoints,
        "save_only_model": False,
        "logging_strategy": "steps",
        "logging_steps": config.logging_steps,
        "report_to": "none",
        "disable_tqdm": True,
    }


def _arguments(config: TrainingConfig, common: Mapping[str, Any]) -> Any:
    from trl.trainer.sft_config import SFTConfig

    return SFTConfig(
        **common,
        per_device_train_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        activation_offloading=False,
        train_sampling_strategy="random",
        # The data: Dialab's pre-tokenized rows as they are, one dialogue per row.
        dataset_kwargs={"skip_prepare_dataset": True},
        max_length=config.max_length,
        packing=False,
        padding_free=False,
        pad_to_multiple_of=None,
        completion_only_loss=None,
        assistant_only_loss=False,
        loss_type="nll",
        shuffle_dataset=False,
        remove_unused_columns=True,
        dataloader_drop_last=False,
        include_num_input_tokens_seen="non_padding",
    )


def lora_config(config: TrainingConfig) -> Any:
    from peft import LoraConfig

    return LoraConfig(
        r=config.lora_r,
        lora_alpha=config.lora_alpha,
        lora_dropout=config.lora_dropout,
        target_modules="all-linear",
        task_type="CAUSAL_LM",
    )


class StepFigures(Protocol):
    """What a trainer adds to each step it reports (``progress_callback``)."""

    def begin(self, state: Any) -> None:
        """Training starts (or resumes) at ``state``."""

    def step_figures(self, state: Any) -> Mapping[str, Any]:
        """The ``StepReport`` fields of the step just logged, beyond the trainer's own log."""


class Throughput:
    """Fine-tuning's figures: the tokens trained per second since the last logged step."""

    def __init__(self) -> None:
        self.since = time.perf_counter()
        self.tokens = 0

    def begin(self, state: Any) -> None:
        self.since, self.tokens = time.perf_counter(), int(state.num_input_tokens_seen)

    def step_figures(self, state: Any) -> Mapping[str, Any]:
        now, tokens = time.perf_counter(), int(state.num_input_tokens_seen)
        elapsed = now - self.since
        speed = (tokens - self.tokens) / elapsed if elapsed > 0 else None
        self.since, self.tokens = now, tokens
        return {"tokens_per_second": speed}


def progress_callback(on_log: LogCallback | None, figures: StepFigures) -> Any:
    """The callback that reports each logged step to ``on_log``: a ``StepReport`` of the
    trainer's log with what ``figures`` adds, once per step, from the main process."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):  # type: ignore[misc]
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            figures.begin(state)

        def on_log(
            self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any
        ) -> None:
            if on_log is None or not logs or "loss" not in logs or not state.is_world_process_zero:
                return  # one report per step, from the main process
            on_log(step_report(state, logs, **figures.step_figures(state)))

    return Progress()


def step_report(state: Any, logs: Mapping[str, Any], **more: Any) -> StepReport:
    """A logged step as the trainer's ``state`` and its log entry say (``more``: what the
    caller adds, e.g. the step's rollouts)."""
    return StepReport(
        step=state.global_step,
        total_steps=state.max_steps,
        epoch=logs.get("epoch", state.epoch),
        loss=logs["loss"],
        learning_rate=logs.get("learning_rate"),
        grad_norm=logs.get("grad_norm"),
        kl=logs.get("kl"),
        **more,
    )


def stop_callback(should_stop: Callable[[], bool]) -> Any:
    from transformers import TrainerCallback

    class Stop(TrainerCallback):  # type: ignore[misc]
        """Asks ``should_stop`` after every optimizer step; stops with a checkpoint saved."""

        stopped = False

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if _main_decides(should_stop):
                self.stopped = True
                control.should_training_stop = True
                control.should_save = True
            return control

    return Stop()


def _main_decides(question: Callable[[], bool]) -> bool:
    """``question()`` as the main process answers it, the same in every process (processes that
    decided apart would wait on each other forever at the next step)."""
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    processes = PartialState()
    answer = [question() if processes.is_main_process else False]
    if processes.num_processes > 1:
        broadcast_object_list(answer, from_process=0)
    return bool(answer[0])


def save_final(
    trainer: Any, tokenizer: Any, out: Path, *, summary: Mapping[str, Any], lora: bool
) -> Path:
    """Write the trained model to ``out/final`` (through a temporary directory), with
    ``summary`` (whose "result" a rerun returns) as dialab_training.json."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if lora:
        model = model.merge_and_unload()
    if getattr(model.config, "use_cache", None) is False:
        model.config.use_cache = True  # switched off for gradient checkpointing; on for inference
    final, partial = out / FINAL_DIR, out / f"{FINAL_DIR}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(str(partial))
    tokenizer.save_pretrained(str(partial))
    (partial / METADATA_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    # A complete final/ is what a rerun returns (``_finished``): the checkpoints, about three
    # times the model's size each with the optimizer's state, would never be read again.
    for checkpoint in out.glob(f"{CHECKPOINT_PREFIX}*"):
        shutil.rmtree(checkpoint, ignore_errors=True)
    return final
