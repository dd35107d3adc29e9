"""Benchmark online SML's rollouts: the engine playing a GRPO step's dialogues with the policy in
the loop against raw batched generation of the same model, and where a GRPO step's time goes.

    .venv/bin/python benchmarks/rollouts.py                      # tiny model, defaults
    .venv/bin/python benchmarks/rollouts.py --model /tmp/house --repeats 3 --steps 6
    .venv/bin/python benchmarks/rollouts.py --skip-step          # part 1 only

Everything is built in a temporary folder: a tiny untrained house model
(``models_gpu.house.model.build_untrained``: a 2-layer Llama, a BPE tokenizer trained on the
tasks' text, the house chat template), unless ``--model DIR`` names a checkpoint, and
``--tasks`` tasks of ``--family`` (``models_gpu.generators.registry``). A step plays
``--tasks-per-step`` tasks x ``--group-size`` dialogues (default 4 x 8 = 32), didactic, up to
``--horizon`` student turns (4), the scripted feedback teacher answering wrong replies, the
student sampling at temperature 1 up to ``--max-new-tokens`` (64) a turn: ``OnlineConfig``'s
defaults. On CPU torch runs with ``devices.training_threads()`` threads throughout (half the
cores), as ``train_online`` does while it trains and plays.

1. Rollout throughput, one model in memory, all arms on the same requests, for each of
   ``--rollout-backends`` in turn (on vLLM: the engine arm's student is online SML's colocated
   engine, ``Rollouts`` built as ``train_online`` builds it; the raw arm calls that engine's
   ``generate``; there is no hf arm). Every run of an arm starts with the backend's prefix cache
   empty, as every training step's rollouts do:
     engine   ``online.Rollouts.__call__``, what TRL calls once a step: the policy as
              ``generator_for_model`` (eval mode, key-value cache on), ``online.play`` (the engine
              with every dialogue in one batch: one student call per round, verification, turn
              classification, the teacher), the rewards and the layout of every dialogue into
              prompt/completion ids (``rollouts.rollouts_tokens``). A stand-in trainer supplies
              the step and an ``accelerate.Accelerator``; ``online.play`` is wrapped to record
              every student request and time every student ``generate`` call.
     raw      the same model's ``TransformersGenerator.generate`` (what the policy is), or
              the vLLM engine's ``generate``, called directly on the very requests the engine
              sent, round by round (one call per round, the same batch shapes and seeds): the
              generation the engine cannot avoid.
              Same seeds, same batches: it must sample exactly the engine's tokens (checked).
     hf       ``model.generate`` on the same prompts, chat-templated, tokenized and left-padded
              beforehand (outside the clock), with transformers' own sampling (same temperature,
              no top-k/top-p) instead of Dialab's per-request seeded sampler; one call per round.
              Informational: it shows what the backend itself (templating, tokenizing, seeded
              sampling) costs. Its replies differ from the engine's, so its token count does too.
   Throughput: student tokens generated (completion tokens, end token included) per second of
   wall time of the whole arm. One untimed warm-up of each arm, then ``--repeats`` timed runs of
   each, rotating the order (engine, raw, hf / raw, hf, engine / ...), and the medians. Every
   engine run plays step 1's dialogues with the same seeds, so each sends the same requests
   (checked). Headline: engine / raw (goal: at least 0.9, issue 32).

2. A GRPO step's breakdown: ``train_online`` for ``--steps`` steps (full fine-tuning, float32,
   no gradient checkpointing, logging every step, no held-out set, no checkpoint before the
   end) with, while it runs, ``trl``'s ``GRPOTrainer`` replaced by a subclass that times its
   parts (nothing else changes) and ``online.play`` wrapped as above. Per step, from the
   trainer's ``on_step_begin`` to its ``on_step_end`` (the callbacks included):
     generation      the student ``generate`` calls inside the rollout;
     engine rest     the rest of ``online.play``: verification, classification, the teacher,
                     building each round's requests;
     rollout rest    the rest of ``Rollouts.__call__`` (``rollout_seconds`` in ``on_log``
                     minus ``online.play``): switching the policy to generation, rewards, the
                     layout of the dialogues into ids;
     TRL scoring     the rest of ``GRPOTrainer._prepare_inputs``: reward function, group
                     advantages, padding into tensors (no extra forward pass: generation and
                     update are aligned, so TRL keeps no old log-probabilities, and beta 0
                     keeps no reference model);
     forward         ``compute_loss``: the policy's forward pass over the 32 dialogues and the
                     clipped GRPO loss;
     backward        ``accelerator.backward(loss)``;
     optimizer       gradient clipping and ``optimizer.step()`` (from ``_clip_grad_norm`` to
                     ``on_optimizer_step``);
     other           the rest of the step (scheduler, zero_grad, callbacks, data loading).
   ``on_log``'s ``update_seconds`` (rollout end to step end) should be about TRL scoring +
   forward + backward + optimizer + other (printed side by side). The first ``--warmup-steps``
   steps (one-time costs: optimizer state, first allocations) are left out of the sums; the
   shares are sums over the measured steps. On CUDA every boundary synchronizes the device
   first, so each part is charged its own kernels. Headlines: the share of a step outside
   generation and the backward pass, and outside generation and the whole update (forward,
   backward, optimizer).

Part 2 also runs once for each of ``--rollout-backends`` (default ``transformers,vllm``: the policy
itself, or online SML's colocated vLLM engine synced before every step,
``models_gpu.training.vllm_rollouts``), on the same model, tasks and seeds; with vLLM the
"generation" part is the engine's ``generate`` calls and the weight sync falls in "TRL scoring"
(TRL syncs inside ``_prepare_inputs``, before it calls the rollout function). The headline gives
each backend's median step and the ratio to the first backend's. In both parts the first
backend's figures keep their plain names and the others' end in the backend's name.

The ``name: value`` lines at the end are the headline: absolute values, then the ratios last.
On a small shared machine absolute speeds move by tens of percent from run to run; only the
ratios of alternating arms in the same run are meaningful. The defaults took about 3.5 minutes
on 2 busy CPU cores when part 1 ran on transformers only (two thirds of it); ``--model <the
house model> --steps 5``, both parts on both backends, took 84 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # the table, not progress bars
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func's warning, once a trainer
warnings.filterwarnings("ignore", message="TRL currently supports vLLM versions")

from models_gpu.spec.online import ROLLOUT_BACKENDS, OnlineConfig  # noqa: E402
from models_gpu.spec.protocol import ProtocolSpec  # noqa: E402
from models_gpu.spec.reports import Report, RolloutFigures, StepReport  # noqa: E402
from models_gpu.spec.training import TrainingConfig  # noqa: E402
from models_gpu.training import online  # noqa: E402
from models_gpu.types import (  # noqa: E402
    DialogueJob,
    DialogueResult,
    Generation,
    GenerationRequest,
    Generator,
    TaskSpec,
)

FEEDBACK_TEXT = "That is not right: the hidden number is higher. Try again, check each step."


# --- Set-up ------------------------------------------------------------------------------------


def make_tasks(family: str, count: int, seed: int) -> list[TaskSpec]:
    """``count`` generated tasks of ``family`` (the family's default knobs)."""
    from models_gpu.generators.families import task_spec
    from models_gpu.generators.registry import generate

    return [task_spec(task, index) for index, task in enumerate(generate(family, count, seed=seed))]


def tiny_model(out_dir: Path, tasks: Sequence[TaskSpec]) -> Path:
    """An untrained house model (2 layers, hidden 128) whose tokenizer knows the tasks' text."""
    from models_gpu.house.model import HouseConfig, build_untrained

    corpus = [f"{task.prompt} The answer is {task.reference['answer']}." for task in tasks]
    return build_untrained(out_dir, [*corpus, FEEDBACK_TEXT], HouseConfig(vocab_size=512))


def online_config(args: argparse.Namespace, rollout_backend: str = "transformers") -> OnlineConfig:
    return OnlineConfig(
        group_size=args.group_size,
        tasks_per_step=args.tasks_per_step,
        horizon=args.horizon,
        max_new_tokens=args.max_new_tokens,
        store_share=0.0,
        rollout_backend=rollout_backend,
    )


def training_config(args: argparse.Namespace) -> TrainingConfig:
    return TrainingConfig(
        learning_rate=1e-5,
        max_steps=args.steps,
        max_length=args.max_length,
        finetuning="full",
        gradient_checkpointing=False,
        precision="float32",
        device=args.device,
        seed=args.seed,
        logging_steps=1,
        save_steps=100_000,
    )


def step_prompts(config: OnlineConfig) -> list[str]:
    """What TRL hands ``rollout_func`` for a step: each task's index, ``group_size`` times."""
    return [str(task) for task in range(config.tasks_per_step) for _ in range(config.group_size)]


def scripted_teacher() -> Generator:
    from models_gpu.backends import load_generator
    from models_gpu.spec.run import RoleSpec

    return load_generator(RoleSpec("scripted", "feedback-teacher"))


@contextmanager
def training_threads(device: Any) -> Iterator[None]:
    """On CPU, torch's threads as ``train_online`` sets them while it trains (and plays)."""
    import torch

    from models_gpu.devices import training_threads as threads_for_training

    threads = torch.get_num_threads()
    if device.type == "cpu":
        torch.set_num_threads(threads_for_training())
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def synchronizer(device: Any) -> Callable[[], None]:
    """Waits for the device's queued kernels (CUDA); a no-op elsewhere."""
    import torch

    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


# --- Recording the student's calls inside online.play -------------------------------------------


@dataclass(frozen=True)
class Call:
    """One student ``generate`` call: its requests, the tokens it sampled, its wall time."""

    requests: tuple[GenerationRequest, ...]
    tokens: int
    seconds: float


@dataclass
class RecordingGenerator:
    """Forwards to a generator and records each ``generate`` call."""

    inner: Generator
    calls: list[Call] = field(default_factory=list)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        started = time.perf_counter()
        generations = self.inner.generate(requests)
        seconds = time.perf_counter() - started  # the backend reads its ids back: synchronized
        tokens = sum(generation.completion_tokens for generation in generations)
        self.calls.append(Call(tuple(requests), tokens, seconds))
        return generations


@dataclass(frozen=True)
class Play:
    """One ``online.play``: the student's calls (one per round) and its wall time."""

    calls: tuple[Call, ...]
    seconds: float

    @property
    def tokens(self) -> int:
        return sum(call.tokens for call in self.calls)

    @property
    def generate_seconds(self) -> float:
        return sum(call.seconds for call in self.calls)


@contextmanager
def recording_plays() -> Iterator[list[Play]]:
    """While inside, ``online.play`` (which ``Rollouts`` calls) records every call it makes."""
    plays: list[Play] = []
    original = online.play

    def recorded_play(
        student: Generator,
        jobs: Sequence[DialogueJob],
        protocol: ProtocolSpec,
        teacher: Generator | None,
    ) -> list[DialogueResult]:
        recorder = RecordingGenerator(student)
        started = time.perf_counter()
        results = original(recorder, jobs, protocol, teacher)
        plays.append(Play(tuple(recorder.calls), time.perf_counter() - started))
        return results

    with mock.patch.object(online, "play", recorded_play):
        yield plays


# --- Part 1: rollout throughput ----------------------------------------------------------------


@dataclass(frozen=True)
class ArmRun:
    """One timed run of an arm: ``tokens`` student tokens in ``seconds`` of wall time, of which
    ``generate_seconds`` inside generation calls (``play_seconds``: inside ``online.play``)."""

    arm: str
    calls: int
    requests: int
    tokens: int
    seconds: float
    generate_seconds: float
    play_seconds: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


class RolloutArms:
    """The arms of part 1 on one model in memory, rollouts on ``backend`` (see the module
    docstring)."""

    def __init__(
        self, args: argparse.Namespace, model_dir: Path, tasks: Sequence[TaskSpec], backend: str
    ) -> None:
        import torch
        from accelerate import Accelerator
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from models_gpu.backends.transformers_backend import generator_for_model
        from models_gpu.devices import resolve_device

        self.device = resolve_device(args.device)
        self.config = online_config(args, backend)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
        self.model = model.to(self.device).eval()
        # On vLLM, train_online's own engine; it starts from the same checkpoint, so it holds
        # the policy's weights without a sync.
        self.vllm = (
            online._colocated_vllm(self.model, model_dir, self.config)
            if backend == "vllm"
            else None
        )
        self.rollouts = online.Rollouts(
            tasks=tasks,
            protocol=ProtocolSpec(mode="didactic", max_turns=args.horizon),
            teacher=scripted_teacher(),
            online=self.config,
            training=training_config(args),
            tokenizer=self.tokenizer,
            on_rollouts=None,
            vllm=self.vllm,
        )
        # What Rollouts reads of TRL's trainer: the step, the model, the accelerator.
        self.trainer = SimpleNamespace(
            state=SimpleNamespace(global_step=0),
            model_wrapped=self.model,
            accelerator=Accelerator(cpu=self.device.type == "cpu"),
        )
        self.raw_generator: Any = (
            self.vllm.generator
            if self.vllm is not None
            else generator_for_model(self.model, self.tokenizer, self.rollouts.policy_params())
        )
        self.rounds: tuple[tuple[GenerationRequest, ...], ...] = ()
        self.padded_rounds: list[tuple[Any, Any]] = []

    @property
    def arms(self) -> tuple[str, ...]:
        return ARM_ORDER if self.vllm is None else ARM_ORDER[:2]

    def close(self) -> None:
        if self.vllm is not None:
            self.vllm.close()

    def forget_prefixes(self) -> None:
        """Every run starts cold, as a training step's rollouts do (on vLLM the sync empties the
        prefix cache; on transformers the policy is a new generator each step): a run replaying
        the requests of the one before must not be served from its cache."""
        self.raw_generator.forget_prefixes()

    def engine(self) -> ArmRun:
        """``Rollouts.__call__`` on step 1's prompts; keeps the requests the engine sent."""
        self.forget_prefixes()
        with recording_plays() as plays:
            started = time.perf_counter()
            self.rollouts(step_prompts(self.config), self.trainer)
            seconds = time.perf_counter() - started
        (play,) = plays
        rounds = tuple(call.requests for call in play.calls)
        if self.rounds and rounds != self.rounds:
            print("WARNING: the engine sent other requests than in its first run")
        self.rounds = rounds
        return ArmRun(
            "engine", len(play.calls), sum(len(r) for r in rounds), play.tokens, seconds,
            play.generate_seconds, play.seconds,
        )  # fmt: skip

    def raw(self) -> ArmRun:
        """The backend's ``generate`` on the engine's requests, one call per round."""
        self.forget_prefixes()
        recorder = RecordingGenerator(self.raw_generator)
        started = time.perf_counter()
        for requests in self.rounds:
            recorder.generate(requests)
        seconds = time.perf_counter() - started
        tokens = sum(call.tokens for call in recorder.calls)
        return ArmRun(
            "raw", len(self.rounds), sum(len(r) for r in self.rounds), tokens, seconds,
            sum(call.seconds for call in recorder.calls),
        )  # fmt: skip

    def hf(self) -> ArmRun:
        """``model.generate`` with transformers' sampling on the engine's prompts, pre-tokenized."""
        import torch

        if not self.padded_rounds:
            self.padded_rounds = [self.left_padded(requests) for requests in self.rounds]
        eos = self.eos_ids()
        sync = synchronizer(self.device)
        torch.manual_seed(0)
        tokens = 0
        started = time.perf_counter()
        for input_ids, attention_mask in self.padded_rounds:
            with torch.inference_mode():
                output = self.model.generate(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    do_sample=True,
                    temperature=self.config.temperature,
                    top_k=0,
                    top_p=1.0,
                    max_new_tokens=self.config.max_new_tokens,
                    eos_token_id=sorted(eos),
                    pad_token_id=self.tokenizer.pad_token_id,
                )
            new_ids: list[list[int]] = output[:, input_ids.shape[1] :].tolist()
            tokens += sum(sampled_length(ids, eos) for ids in new_ids)
        sync()
        seconds = time.perf_counter() - started
        requests = sum(len(r) for r in self.rounds)
        return ArmRun("hf", len(self.rounds), requests, tokens, seconds, seconds)

    def left_padded(self, requests: Sequence[GenerationRequest]) -> tuple[Any, Any]:
        """The requests' prompts as the backend makes them, left-padded, on the device."""
        import torch

        ids: list[list[int]] = self.tokenizer(
            self.raw_generator.prompts(requests), add_special_tokens=False
        )["input_ids"]
        width = max(len(row) for row in ids)
        input_ids = torch.full((len(ids), width), self.tokenizer.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(ids), width), dtype=torch.long)
        for row, prompt in enumerate(ids):
            input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        return input_ids.to(self.device), attention_mask.to(self.device)

    def eos_ids(self) -> set[int]:
        configured = self.model.generation_config.eos_token_id
        ids = set(configured if isinstance(configured, list) else [configured])
        ids.add(self.tokenizer.eos_token_id)
        return {int(token) for token in ids if token is not None}


def sampled_length(new_ids: Sequence[int], eos: set[int]) -> int:
    """Tokens a reply sampled: up to and including its first end token."""
    return next((i + 1 for i, token in enumerate(new_ids) if token in eos), len(new_ids))


ARM_ORDER = ("engine", "raw", "hf")
ARM_HEADER = (
    f"{'run':>3} {'arm':<7} {'calls':>5} {'requests':>8} {'tokens':>7} {'wall s':>7} "
    f"{'in play s':>9} {'in gen s':>8} {'tokens/s':>9}"
)


def arm_row(number: int, run: ArmRun) -> str:
    play = f"{run.play_seconds:>9.3f}" if run.arm == "engine" else f"{'-':>9}"
    return (
        f"{number:>3} {run.arm:<7} {run.calls:>5} {run.requests:>8} {run.tokens:>7,} "
        f"{run.seconds:>7.3f} {play} {run.generate_seconds:>8.3f} {run.tokens_per_second:>9,.0f}"
    )


def measure_rollouts(
    args: argparse.Namespace, model_dir: Path, tasks: Sequence[TaskSpec]
) -> dict[str, float]:
    """Part 1 for each of ``--rollout-backends``, named as in ``measure_grpo_steps``."""
    return per_backend(
        args.rollout_backends,
        lambda backend: measure_backend_rollouts(args, model_dir, tasks, backend),
    )


def measure_backend_rollouts(
    args: argparse.Namespace, model_dir: Path, tasks: Sequence[TaskSpec], backend: str
) -> dict[str, float]:
    """Warm up, run the arms in rotating order, print the runs and the medians."""
    import torch

    arms = RolloutArms(args, model_dir, tasks, backend)
    config = arms.config
    print(
        f"\n1. rollout throughput, rollouts on {backend}: {config.dialogues_per_step} dialogues "
        f"({config.tasks_per_step} tasks x group {config.group_size}), didactic, horizon "
        f"{config.horizon}, max {config.max_new_tokens} new tokens, temperature "
        f"{config.temperature}, device {arms.device}",
        flush=True,
    )
    measure: dict[str, Callable[[], ArmRun]] = {
        "engine": arms.engine,
        "raw": arms.raw,
        "hf": arms.hf,
    }
    order = arms.arms
    runs: dict[str, list[ArmRun]] = {arm: [] for arm in order}
    try:
        with training_threads(arms.device):
            print(f"torch threads: {torch.get_num_threads()}; one untimed warm-up of each arm")
            for arm in order:  # warm-up; the engine first: the others replay its requests
                measure[arm]()
            print(ARM_HEADER)
            print("-" * len(ARM_HEADER))
            number = 0
            for repeat in range(args.repeats):
                shift = repeat % len(order)
                for arm in order[shift:] + order[:shift]:
                    number += 1
                    run = measure[arm]()
                    runs[arm].append(run)
                    print(arm_row(number, run), flush=True)
    finally:
        arms.close()
    return rollout_summary(runs)


def rollout_summary(runs: dict[str, list[ArmRun]]) -> dict[str, float]:
    median = {
        arm: statistics.median(r.tokens_per_second for r in arm_runs)
        for arm, arm_runs in runs.items()
    }
    engine_tokens = {run.tokens for run in runs["engine"]}
    if engine_tokens != {run.tokens for run in runs["raw"]}:
        print(
            f"WARNING: the raw calls sampled other token counts than the engine: "
            f"{sorted(engine_tokens)} vs {sorted({run.tokens for run in runs['raw']})}"
        )
    in_generation = statistics.median(r.generate_seconds / r.seconds for r in runs["engine"])
    hf = (
        f", hf {median['hf']:,.0f}; engine / hf {median['engine'] / median['hf']:.3f}"
        if "hf" in median
        else ""
    )
    print(
        f"median tokens/s: engine {median['engine']:,.0f}, raw {median['raw']:,.0f}; engine / "
        f"raw {median['engine'] / median['raw']:.3f} (goal >= 0.9){hf}; the engine arm spends "
        f"{in_generation:.1%} of its wall time in the student's generate calls"
    )
    summary = {
        "rollout_tokens_per_second": median["engine"],
        "raw_generation_tokens_per_second": median["raw"],
        "rollout_share_in_generation": in_generation,
        "rollout_vs_raw_generation": median["engine"] / median["raw"],
    }
    if "hf" in median:
        summary["model_generate_tokens_per_second"] = median["hf"]
        summary["rollout_vs_model_generate"] = median["engine"] / median["hf"]
    return summary


def per_backend(
    backends: Sequence[str], measure: Callable[[str], dict[str, float]]
) -> dict[str, float]:
    """``measure(backend)`` for each backend: the first backend's figures keep their plain
    names, the others' carry the backend's name at the end."""
    headline: dict[str, float] = {}
    for backend in backends:
        suffix = "" if backend == backends[0] else f"_{backend}"
        headline.update({f"{name}{suffix}": value for name, value in measure(backend).items()})
    return headline


# --- Part 2: a GRPO step's breakdown ------------------------------------------------------------


@dataclass
class StepTiming:
    """One optimizer step: its wall time, the seconds of each timed part, and the gap since the
    previous step ended (logging, on_log)."""

    step: int = 0
    seconds: float = 0.0
    gap_before: float = 0.0
    parts: dict[str, float] = field(default_factory=dict)


def step_clock(sync: Callable[[], None]) -> Any:
    """A ``TrainerCallback`` that times each step (``on_step_begin`` to ``on_step_end``) and the
    parts the ``TimedGRPOTrainer`` reports; ``steps`` holds a ``StepTiming`` per step."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.steps: list[StepTiming] = []
            self.current = StepTiming()
            self.began = self.ended = self.optimizer_began = 0.0

        @contextmanager
        def timed(self, part: str) -> Iterator[None]:
            sync()
            started = time.perf_counter()
            try:
                yield
            finally:
                sync()
                self.add(part, time.perf_counter() - started)

        def add(self, part: str, seconds: float) -> None:
            self.current.parts[part] = self.current.parts.get(part, 0.0) + seconds

        def optimizer_begins(self) -> None:
            sync()
            self.optimizer_began = time.perf_counter()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            sync()
            self.began = time.perf_counter()
            gap = self.began - self.ended if self.ended else 0.0
            self.current = StepTiming(gap_before=gap)

        def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            sync()
            self.add("optimizer", time.perf_counter() - self.optimizer_began)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            sync()
            self.ended = time.perf_counter()
            self.current.step = int(state.global_step)
            self.current.seconds = self.ended - self.began
            self.steps.append(self.current)

    return StepClock()


@contextmanager
def timed_grpo_trainer(clock: Any) -> Iterator[None]:
    """While inside, ``trl.trainer.grpo_trainer.GRPOTrainer`` (which ``train_online`` imports
    when called) is a subclass that reports its parts to ``clock``; nothing else changes."""
    import trl.trainer.grpo_trainer as grpo_module

    original = grpo_module.GRPOTrainer

    class TimedGRPOTrainer(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            backward = self.accelerator.backward

            def timed_backward(loss: Any, **backward_kwargs: Any) -> Any:
                with clock.timed("backward"):
                    return backward(loss, **backward_kwargs)

            self.accelerator.backward = timed_backward
            self.add_callback(clock)  # last: after train_online's own callbacks

        def _prepare_inputs(self, generation_batch: Any) -> Any:
            with clock.timed("prepare"):
                return super()._prepare_inputs(generation_batch)

        def compute_loss(self, *args: Any, **kwargs: Any) -> Any:
            with clock.timed("forward"):
                return super().compute_loss(*args, **kwargs)

        def _clip_grad_norm(self, model: Any) -> Any:
            clock.optimizer_begins()  # clipping, then on_optimizer_step after optimizer.step()
            return super()._clip_grad_norm(model)

    with mock.patch.object(grpo_module, "GRPOTrainer", TimedGRPOTrainer):
        yield


PARTS = (
    "generation", "engine rest", "rollout rest", "TRL scoring", "forward", "backward",
    "optimizer", "other",
)  # fmt: skip
UPDATE_PARTS = ("forward", "backward", "optimizer")


@dataclass(frozen=True)
class StepBreakdown:
    """A step's wall time cut into ``PARTS`` (they add up to ``seconds``), with ``on_log``'s
    ``update_seconds`` beside them."""

    step: int
    seconds: float
    parts: dict[str, float]
    logged_update: float
    gap_before: float


def breakdown(timing: StepTiming, play: Play, figures: RolloutFigures) -> StepBreakdown:
    """One step's parts from the clock, the recorded ``online.play`` and its ``on_log`` report's
    rollout figures."""
    rollout = figures.rollout_seconds
    parts = {
        "generation": play.generate_seconds,
        "engine rest": play.seconds - play.generate_seconds,
        "rollout rest": rollout - play.seconds,
        "TRL scoring": timing.parts["prepare"] - rollout,
        "forward": timing.parts["forward"],
        "backward": timing.parts["backward"],
        "optimizer": timing.parts["optimizer"],
    }
    parts["other"] = timing.seconds - sum(parts.values())
    return StepBreakdown(
        timing.step, timing.seconds, parts, float(figures.update_seconds or 0.0), timing.gap_before
    )


STEP_HEADER = (
    f"{'step':>4} {'step s':>7} "
    + " ".join(f"{part:>{max(len(part), 6)}}" for part in PARTS)
    + f" {'update s':>8} {'logged':>7}"
)


def step_row(label: str, seconds: float, parts: dict[str, float], update: str) -> str:
    computed = sum(parts[part] for part in PARTS[3:])  # from the rollout's end to the step's end
    return (
        f"{label:>4} {seconds:>7.3f} "
        + " ".join(f"{parts[part]:>{max(len(part), 6)}.3f}" for part in PARTS)
        + f" {computed:>8.3f} {update:>7}"
    )


def measure_grpo_steps(
    args: argparse.Namespace, model_dir: Path, tasks: Sequence[TaskSpec], work: Path
) -> dict[str, float]:
    """Part 2 for each of ``--rollout-backends``, on the same model, tasks and seeds; the
    first backend's figures keep their plain names, the others' carry the backend's name, and
    each step time after the first is also given as a ratio to the first's."""
    backends = args.rollout_backends
    headline = per_backend(
        backends,
        lambda backend: measure_grpo_step(args, model_dir, tasks, work / backend, backend),
    )
    for backend in backends[1:]:
        headline[f"grpo_step_{backend}_vs_{backends[0]}"] = (
            headline[f"grpo_step_seconds_{backend}"] / headline["grpo_step_seconds"]
        )
    return headline


def measure_grpo_step(
    args: argparse.Namespace,
    model_dir: Path,
    tasks: Sequence[TaskSpec],
    work: Path,
    rollout_backend: str = "transformers",
) -> dict[str, float]:
    """``train_online`` for ``--steps`` steps under the clock; print each step and the shares."""
    from models_gpu.devices import resolve_device
    from models_gpu.training.online import train_online

    config = online_config(args, rollout_backend)
    training = training_config(args)
    print(
        f"\n2. GRPO step breakdown, rollouts on {rollout_backend}: train_online, {args.steps} "
        f"steps of {config.dialogues_per_step} dialogues, full fine-tuning, float32, device "
        f"{resolve_device(args.device)}; seconds per part (the first {args.warmup_steps} left "
        "out of the totals)",
        flush=True,
    )
    clock = step_clock(synchronizer(resolve_device(args.device)))
    logs: list[Report] = []
    with recording_plays() as plays, timed_grpo_trainer(clock):
        train_online(
            training,
            config,
            base_model=model_dir,
            tasks=tasks,
            protocol=ProtocolSpec(mode="didactic", max_turns=args.horizon),
            teacher=scripted_teacher(),
            output_dir=work / "grpo",
            on_log=logs.append,
        )
    entries = {
        entry.step: entry.rollouts
        for entry in logs
        if isinstance(entry, StepReport) and entry.rollouts is not None
    }
    if not len(clock.steps) == len(plays) == len(entries) == args.steps:
        raise RuntimeError(
            f"{args.steps} steps expected; timed {len(clock.steps)}, {len(plays)} rollouts, "
            f"{len(entries)} step logs"
        )
    steps = [
        breakdown(timing, play, entries[timing.step])
        for timing, play in zip(clock.steps, plays, strict=True)
    ]
    print(STEP_HEADER)
    print("-" * len(STEP_HEADER))
    for step in steps:
        print(step_row(str(step.step), step.seconds, step.parts, f"{step.logged_update:.3f}"))
    return step_summary(steps[args.warmup_steps :])


def step_summary(steps: Sequence[StepBreakdown]) -> dict[str, float]:
    """Totals over the measured steps, each part's share of them, and the headline shares."""
    total = sum(step.seconds for step in steps)
    parts = {part: sum(step.parts[part] for step in steps) for part in PARTS}
    logged = sum(step.logged_update for step in steps)
    print(step_row("sum", total, parts, f"{logged:.3f}"))
    print(
        f"{'%':>4} {1:>7.1%} "
        + " ".join(f"{parts[part] / total:>{max(len(part), 6)}.1%}" for part in PARTS)
    )
    gaps = statistics.mean(step.gap_before for step in steps)
    print(
        f"between steps (logging, on_log; not in the steps above): {gaps:.3f} s on average. "
        "'update s': the parts from the rollout's end to the step's end; 'logged': on_log's "
        "update_seconds over the same span."
    )
    share = {part: seconds / total for part, seconds in parts.items()}
    update = sum(share[part] for part in UPDATE_PARTS)
    return {
        "grpo_step_seconds": statistics.median(step.seconds for step in steps),
        "grpo_step_share_generation": share["generation"],
        "grpo_step_share_backward": share["backward"],
        "grpo_step_share_update": update,
        "grpo_step_share_outside_generation_and_update": 1 - share["generation"] - update,
        "grpo_step_share_outside_generation_and_backward": (
            1 - share["generation"] - share["backward"]
        ),
    }


# --- Command line -------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a checkpoint directory (default: build one)")
    parser.add_argument("--work-dir", type=Path, help="default: a new temporary folder")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--skip-rollouts", action="store_true", help="skip part 1")
    parser.add_argument("--skip-step", action="store_true", help="skip part 2")
    parser.add_argument("--family", choices=("guess_number", "arithmetic"), default="guess_number")
    parser.add_argument("--tasks", type=int, default=16, help="training tasks generated")
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=4, help="most student turns")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="a student turn, at most")
    parser.add_argument("--repeats", type=int, default=5, help="part 1: timed runs of each arm")
    parser.add_argument("--steps", type=int, default=8, help="part 2: GRPO steps")
    parser.add_argument("--warmup-steps", type=int, default=1, help="part 2: left out")
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rollout-backends",
        default="transformers,vllm",
        help="what plays the rollouts, each in its own run (OnlineConfig.rollout_backend)",
    )
    args = parser.parse_args(argv)
    args.rollout_backends = [name.strip() for name in args.rollout_backends.split(",")]
    unknown = set(args.rollout_backends) - set(ROLLOUT_BACKENDS)
    if unknown or not args.rollout_backends:
        parser.error(f"--rollout-backends: each one of {', '.join(ROLLOUT_BACKENDS)}")
    for name in ("tasks", "tasks_per_step", "group_size", "horizon", "repeats", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.tasks < args.tasks_per_step:
        parser.error("--tasks must be at least --tasks-per-step")
    if not 0 <= args.warmup_steps < args.steps:
        parser.error("--warmup-steps must be at least 0 and less than --steps")
    if args.model is not None and not (args.model / "config.json").is_file():
        parser.error(f"--model {str(args.model)!r} is not a checkpoint directory (no config.json)")
    return args


HEADLINE_LAST = ("rollout_vs_raw_generation", "grpo_step_share_outside_generation_and_backward")


def print_headline(headline: dict[str, float]) -> None:
    """Absolute values, then ratios and shares, the two goals (for each backend) last."""
    ratios = [name for name in headline if "_vs_" in name or "_share_" in name]
    goals = [name for goal in HEADLINE_LAST for name in ratios if name.startswith(goal)]
    ratios = [name for name in ratios if name not in goals] + goals
    for name in [name for name in headline if name not in ratios] + ratios:
        print(f"{name}: {headline[name]:.3f}")


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    started = time.perf_counter()
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="dialab-rollouts-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    headline: dict[str, float] = {}
    try:
        tasks = make_tasks(args.family, args.tasks, args.seed)
        model_dir = args.model or tiny_model(work / "model", tasks)
        print(
            f"model: {model_dir.resolve()}; {args.tasks} {args.family} tasks; work folder: "
            f"{work}; {os.cpu_count()} CPUs, load average {_load()}",
            flush=True,
        )
        if not args.skip_rollouts:
            headline.update(measure_rollouts(args, model_dir.resolve(), tasks))
        if not args.skip_step:
            headline.update(measure_grpo_steps(args, model_dir.resolve(), tasks, work))
    finally:
        if not args.keep and args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nwall time: {time.perf_counter() - started:.0f} s; load average {_load()}\n")
    print_headline(headline)


def _load() -> str:
    return " ".join(f"{load:.1f}" for load in os.getloadavg())


if __name__ == "__main__":
    main()
