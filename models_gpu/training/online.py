"""Online SML: multi-turn GRPO over dialogues the policy plays, with TRL's ``GRPOTrainer``.

TRL draws the step's tasks (``tasks_per_step``, each repeated ``group_size`` times) and calls
``rollout_func``; there the dialogue engine plays every dialogue of the step together (one
batched call per role per round) with the policy, as it is at this step, as the student and the
run's teacher (scripted or a model backend) answering, under the run's protocol cut to
``horizon`` turns. Each dialogue comes back as the ids the student sampled with the context
between them (``rollouts.rollouts_tokens``: ``env_mask`` marks the sampled ids, the only ones
trained) and its reward (``spec.online.dialogue_reward``); TRL normalises the rewards within
each group and takes the clipped policy-gradient step. Every TRL setting that changes a result
is set here explicitly (``loss_type``, ``scale_rewards``, ``beta``, ``bf16``...): ``rollout_func``
is an experimental TRL hook, and tests/models_gpu/training/test_online.py fails loudly if an
upgrade changes it (trl is pinned in pyproject.toml).

Seeds: dialogue i of step s samples with ``rollout_seed(seed, s, i)``, and the task order of
epoch e is drawn from seed + e (``EpochSeededSampler``), so a run resumed from a checkpoint plays
the steps after it as an uninterrupted run would (given the same weights), in any epoch.

Reports (``on_log``, records of ``spec.reports``), one ``StepReport`` per logged step
(``logging_steps``) from the main process: the step, TRL's loss, learning rate, grad norm (and
KL when beta > 0), and that step's ``RolloutFigures``: the mean reward, how many dialogues were
solved by turn k (k = 1..horizon), how many groups had rewards all equal (they teach nothing:
zero advantage), the student's tokens and questions, and the time spent playing
(``rollout_seconds``: generation, verification, rewards and the token layout) and updating
(``update_seconds``: TRL's forward, backward and optimizer step). Held-out evaluations (every
``eval_every`` steps, before the first step and at the end) report a ``HeldOutReport``: how
many of the held-out dialogues were solved by turn k. ``on_rollouts(step, results)`` receives
the stored share of every step's dialogues.

Output directory, resume, cancel, device and precision: as ``trainer.train`` (its module
docstring); the job identity in training_job.json covers both configurations, the protocol and
the tasks.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models_gpu.conversation import ViewMessage, student_view
from models_gpu.engine import run_dialogues
from models_gpu.spec.online import OnlineConfig, dialogue_reward
from models_gpu.spec.protocol import ProtocolSpec
from models_gpu.spec.reports import (
    HeldOutReport,
    RolloutFigures,
    SolvedByTurn,
    TrainResult,
)
from models_gpu.spec.templates import render_for_dialogue, resolve_templates
from models_gpu.spec.training import TrainingConfig, TrainingConfigError
from models_gpu.training.rollouts import RolloutTokens, rollouts_tokens
from models_gpu.training.trainer import (
    LogCallback,
    TrainerSession,
    logged,
    progress_callback,
)
from models_gpu.types import DialogueJob, DialogueResult, Generator, TaskSpec

if TYPE_CHECKING:
    from models_gpu.training.vllm_rollouts import ColocatedVllm

RolloutCallback = Callable[[int, list[DialogueResult]], None]


def rollout_seed(seed: int, step: int | str, position: int) -> int:
    """The seed of dialogue ``position`` of step ``step`` (stable across processes)."""
    digest = hashlib.blake2b(f"{seed}:rollout:{step}:{position}".encode(), digest_size=4)
    return int.from_bytes(digest.digest(), "big") >> 1


def play(
    student: Generator,
    jobs: Sequence[DialogueJob],
    protocol: ProtocolSpec,
    teacher: Generator | None,
) -> list[DialogueResult]:
    """Every job played to its end, all together; results in the order of ``jobs``, which must
    each be a different (task, sample)."""
    keys = [(job.task.task_id, job.sample_index) for job in jobs]
    if len(set(keys)) != len(keys):
        raise ValueError("each job must be a different (task, sample): their results would mix")
    results: dict[tuple[int, int], DialogueResult] = {}

    def keep(finished: list[DialogueResult]) -> None:
        results.update(((result.task_id, result.sample_index), result) for result in finished)

    run_dialogues(
        jobs, protocol, student=student, teacher=teacher, on_finished=keep, batch_size=len(jobs)
    )
    return [results[key] for key in keys]


def rollout_figures(
    results: Sequence[DialogueResult],
    rewards: Sequence[float],
    group_size: int,
    horizon: int,
    rollout_seconds: float,
) -> RolloutFigures:
    """What a step's dialogues say (see the module docstring)."""
    groups = [rewards[i : i + group_size] for i in range(0, len(rewards), group_size)]
    student_turns = [t for r in results for t in r.turns if t.role == "student"]
    return RolloutFigures(
        solved=SolvedByTurn.of((r.first_correct_turn for r in results), horizon),
        mean_reward=sum(rewards) / len(rewards),
        groups=len(groups),
        zero_variance_groups=sum(max(g) == min(g) for g in groups),
        student_tokens=sum(len(t.token_ids) for t in student_turns),
        student_turns=len(student_turns),
        questions=sum(t.kind == "question" for t in student_turns),
        rollout_seconds=rollout_seconds,
    )


@contextmanager
def policy(trainer: Any, tokenizer: Any, params: Mapping[str, Any]) -> Iterator[Generator]:
    """The model being trained, as it is now, as a ``transformers`` generator with ``params``:
    in eval mode with its key-value cache on while it generates, then back as it was."""
    from trl.models.utils import unwrap_model_for_generation

    from models_gpu.backends.transformers_backend import generator_for_model

    with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
        was_training = model.training
        config = getattr(model, "config", None)
        cache = getattr(config, "use_cache", None)
        model.eval()
        if config is not None:
            config.use_cache = True
        try:
            yield generator_for_model(model, tokenizer, params)
        finally:
            if config is not None:
                config.use_cache = cache
            model.train(was_training)


class Rollouts:
    """TRL's ``rollout_func``: plays a step's dialogues and lays them out for the update."""

    def __init__(
        self,
        *,
        tasks: Sequence[TaskSpec],
        protocol: ProtocolSpec,
        teacher: Generator | None,
        online: OnlineConfig,
        training: TrainingConfig,
        tokenizer: Any,
        on_rollouts: RolloutCallback | None,
        vllm: ColocatedVllm | None = None,
    ) -> None:
        self.tasks = tasks
        self.vllm = vllm  # the engine that plays, when rollout_backend is vllm
        self.tasks_by_id = {task.task_id: task for task in tasks}
        self.templates = resolve_templates(protocol.templates)
        self.protocol = replace(protocol, max_turns=online.horizon)
        self.teacher = teacher
        self.online = online
        self.training = training
        self.tokenizer = tokenizer
        self.on_rollouts = on_rollouts
        self.figures: RolloutFigures | None = None  # the last step's
        self.finished_at = time.perf_counter()

    def begin(self, state: Any) -> None:
        """Nothing to do when training starts (``StepFigures``)."""

    def step_figures(self, state: Any) -> Mapping[str, Any]:
        """The step's rollouts (``StepFigures``)."""
        return {"rollouts": self.figures}

    def policy_params(self) -> dict[str, Any]:
        return {
            "temperature": self.online.temperature,
            "max_new_tokens": self.online.max_new_tokens,
            "micro_batch_size": self.online.dialogues_per_step,
        }

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        started = time.perf_counter()
        step = trainer.state.global_step + 1  # the step these dialogues train
        jobs = [
            DialogueJob(
                task=self.tasks[int(prompt)],
                sample_index=position,
                seed=rollout_seed(self.training.seed, step, position),
            )
            for position, prompt in enumerate(prompts)
        ]
        if self.vllm is not None:  # TRL pushed this step's weights into it (sync_weights)
            results = play(self.vllm.generator, jobs, self.protocol, self.teacher)
        else:
            with policy(trainer, self.tokenizer, self.policy_params()) as student:
                results = play(student, jobs, self.protocol, self.teacher)
        rewards = [dialogue_reward(r.first_correct_turn, self.online.gamma) for r in results]
        laid_out = self.lay_out(results)
        self.finished_at = time.perf_counter()
        self.figures = rollout_figures(
            results,
            rewards,
            self.online.group_size,
            self.online.horizon,
            rollout_seconds=self.finished_at - started,
        )
        if self.on_rollouts is not None and trainer.accelerator.is_main_process:
            self.on_rollouts(step, self.stored_share(results, step))
        return {
            "prompt_ids": [tokens.prompt_ids for tokens in laid_out],
            "completion_ids": [tokens.completion_ids for tokens in laid_out],
            "env_mask": [tokens.env_mask for tokens in laid_out],
            "logprobs": self.sampling_logprobs(laid_out),
            "dialogue_reward": rewards,
        }

    def sampling_logprobs(self, laid_out: Sequence[RolloutTokens]) -> list[list[float]] | None:
        """What vLLM sampled each id with, for TRL's importance-sampling correction; None on
        transformers, where the policy itself sampled."""
        if self.vllm is None:
            return None
        logprobs = [tokens.logprobs for tokens in laid_out]
        if any(row is None for row in logprobs):
            raise RuntimeError("vLLM rollouts came back without their log-probabilities")
        return [row for row in logprobs if row is not None]

    def lay_out(self, results: Sequence[DialogueResult]) -> list[RolloutTokens]:
        """Each dialogue as the update's ids (``rollouts.rollouts_tokens``)."""
        dialogues = [(self.student_view(result), result.turns) for result in results]
        return rollouts_tokens(self.tokenizer, dialogues, max_length=self.training.max_length)

    def student_view(self, result: DialogueResult) -> list[ViewMessage]:
        task = self.tasks_by_id[result.task_id]
        system = render_for_dialogue(
            self.templates, "student_system", max_turns=self.protocol.max_turns,
            shards_total=len(task.shards),
        )  # fmt: skip
        return student_view(
            system=system,
            task_prompt=task.prompt,
            sharded=self.protocol.mode == "sharded",
            turns=result.turns,
        )

    def stored_share(self, results: list[DialogueResult], step: int) -> list[DialogueResult]:
        """``store_share`` of the step's dialogues (at least one when the share is not 0),
        drawn at random, seeded by the run's seed and the step."""
        count = math.ceil(self.online.store_share * len(results))
        chosen = random.Random(f"{self.training.seed}:store:{step}").sample(
            range(len(results)), count
        )
        return [results[i] for i in sorted(chosen)]


def reward_from_rollout(
    prompts: list[Any], completions: list[Any], dialogue_reward: list[float], **_: Any
) -> list[float]:
    """TRL's reward function: the reward each dialogue earned in its rollout."""
    return list(dialogue_reward)


class EpochSeededSampler:
    """TRL's task sampler, its order in epoch e drawn from seed + e. TRL's draws each epoch's
    order from one generator that runs on across epochs, and a resumed trainer starts a fresh
    one: resumed in epoch 5, it played epoch 0's order. The trainer calls ``set_epoch`` before
    each epoch (resumed or not)."""

    def __init__(self, sampler: Any) -> None:
        self.sampler = sampler

    def set_epoch(self, epoch: int) -> None:
        if self.sampler.shuffle:
            self.sampler.generator.manual_seed((self.sampler.seed or 0) + epoch)

    def __iter__(self) -> Iterator[int]:
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)


def _trainer_class() -> type:
    """TRL's GRPO trainer with ``EpochSeededSampler`` and, for vLLM rollouts, Dialab's engine
    in TRL's colocate mode (imported when training: TRL is heavy)."""
    from trl.trainer.grpo_trainer import GRPOTrainer

    class DialabGRPOTrainer(GRPOTrainer):
        def __init__(self, *args: Any, vllm: ColocatedVllm | None = None, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)  # use_vllm is off: TRL builds no engine itself
            if vllm is not None:
                # TRL's colocate mode with the engine of training.vllm_rollouts (its module
                # docstring says why not TRL's): TRL syncs it before each step's rollout_func
                # and applies the importance-sampling correction set in _grpo_arguments.
                vllm.model = self.model
                self.use_vllm = True
                self.vllm_mode = "colocate"
                self.vllm_generation = vllm  # type: ignore[assignment]  # its sync_weights is what TRL calls
                self._last_loaded_step = -1

        def _get_train_sampler(self, dataset: Any = None) -> Any:  # a Sampler to the DataLoader
            return EpochSeededSampler(super()._get_train_sampler(dataset))

    return DialabGRPOTrainer


def train_online(
    training: TrainingConfig,
    online: OnlineConfig,
    *,
    base_model: str | Path,
    tasks: Sequence[TaskSpec],
    protocol: ProtocolSpec,
    teacher: Generator | None,
    output_dir: str | Path,
    heldout: Sequence[DialogueJob] = (),
    heldout_protocol: ProtocolSpec | None = None,
    heldout_teacher: Generator | None = None,
    heldout_params: Mapping[str, Any] | None = None,
    on_log: LogCallback | None = None,
    on_rollouts: RolloutCallback | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> TrainResult:
    """Train the checkpoint in ``base_model`` by online GRPO on ``tasks`` (see the module
    docstring). ``heldout`` jobs are played under ``heldout_protocol`` (default: ``protocol``)
    against ``heldout_teacher`` (default: ``teacher``) by the policy with ``heldout_params``
    (transformers backend params; default: greedy).
    Raises ``TrainingConfigError`` / ValueError for a configuration that cannot run."""
    problems = training.problems() + online.problems()
    if problems:
        raise TrainingConfigError(problems)
    if not tasks:
        raise ValueError("online training needs at least one training task")
    if online.tasks_per_step > len(tasks):
        raise ValueError(
            f"tasks_per_step is {online.tasks_per_step} but there are only {len(tasks)} "
            "training tasks"
        )
    identity = {
        "training": training.to_json(),
        "online": online.run_identity(),
        "protocol": json.loads(json.dumps(asdict(protocol), default=str)),
        "tasks": [task.task_id for task in tasks],
    }
    session = TrainerSession(
        training,
        base_model=base_model,
        output_dir=output_dir,
        identity=identity,
        identity_hash=hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest(),
        should_stop=should_stop,
    )
    if session.finished is not None:
        return session.finished
    from datasets import Dataset

    tokenizer = session.start()
    model = session.load_model()
    vllm = _colocated_vllm(model, base_model, online) if online.rollout_backend == "vllm" else None
    rollouts = Rollouts(
        tasks=tasks,
        protocol=protocol,
        teacher=teacher,
        online=online,
        training=training,
        tokenizer=tokenizer,
        on_rollouts=on_rollouts,
        vllm=vllm,
    )
    evaluation = _HeldOut(
        jobs=heldout,
        protocol=heldout_protocol or protocol,
        teacher=heldout_teacher or teacher,
        tokenizer=tokenizer,
        params=dict(heldout_params or {"temperature": 0.0}),
        on_log=on_log,
    )
    schedule = _schedule_callback(rollouts, evaluation, online)
    try:
        trainer = _trainer_class()(
            model=model,
            reward_funcs=[reward_from_rollout],
            args=_grpo_arguments(training, online, session.arguments()),
            train_dataset=Dataset.from_dict({"prompt": [str(i) for i in range(len(tasks))]}),
            processing_class=tokenizer,
            peft_config=session.peft_config(),
            rollout_func=rollouts,
            callbacks=session.callbacks(progress_callback(on_log, rollouts), schedule),
            vllm=vllm,
        )
        schedule.trainer = trainer
        state = session.run(trainer)
        if not session.stopped:
            evaluation.run(trainer, state.global_step)
    finally:
        if vllm is not None:
            vllm.close()
    result = session.result(
        reward_history=logged(state, "reward"), heldout=tuple(evaluation.history)
    )
    summary = {"what": "A Dialab student trained by online SML (models_gpu.training.online)."}
    return session.save(trainer, result, summary)


def _colocated_vllm(model: Any, base_model: str | Path, online: OnlineConfig) -> ColocatedVllm:
    """The engine that plays the rollouts, started from the base checkpoint in the policy's
    dtype (vLLM's log-probabilities then differ from the policy's only by kernels), sampling
    as ``Rollouts.policy_params`` does."""
    from models_gpu.training.vllm_rollouts import ColocatedVllm

    params = {
        "dtype": str(model.dtype).removeprefix("torch."),
        "temperature": online.temperature,
        "max_new_tokens": online.max_new_tokens,
    }
    return ColocatedVllm(model, str(base_model), params)


def _grpo_arguments(
    training: TrainingConfig, online: OnlineConfig, common: Mapping[str, Any]
) -> Any:
    from trl.trainer.grpo_config import GRPOConfig

    return GRPOConfig(
        **common,
        # One step: tasks_per_step tasks x group_size dialogues, one update on them.
        per_device_train_batch_size=online.dialogues_per_step,
        gradient_accumulation_steps=1,
        num_generations=online.group_size,
        steps_per_generation=1,
        num_iterations=1,
        shuffle_dataset=True,
        # The objective: the papers' GRPO (sequence-normalised), rewards normalised per group.
        loss_type="grpo",
        scale_rewards="group",
        beta=online.beta,
        epsilon=online.clip_epsilon,
        importance_sampling_level="token",
        mask_truncated_completions=False,
        top_entropy_quantile=1.0,
        disable_dropout=False,
        # The rollout plays the dialogues; these only bound what TRL itself would generate.
        temperature=online.temperature,
        max_completion_length=training.max_length,
        # Off for TRL, which would build its own engine: Dialab's is set on the trainer
        # (_trainer_class). With it, truncated importance sampling per token, TRL's correction
        # for the gap between vLLM's numerics and the policy's: set here, not left to defaults.
        use_vllm=False,
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_truncate",
        vllm_importance_sampling_clip_max=3.0,
        log_completions=False,
        remove_unused_columns=False,
    )


class _HeldOut:
    """The held-out evaluation: the policy, as it is, plays ``jobs``; how many were solved by
    turn k (the web side computes the accuracy and its interval from the counts)."""

    def __init__(
        self,
        *,
        jobs: Sequence[DialogueJob],
        protocol: ProtocolSpec,
        teacher: Generator | None,
        tokenizer: Any,
        params: dict[str, Any],
        on_log: LogCallback | None,
    ) -> None:
        self.jobs = jobs
        self.protocol = protocol
        self.teacher = teacher
        self.tokenizer = tokenizer
        self.params = params
        self.on_log = on_log
        self.history: list[HeldOutReport] = []

    def run(self, trainer: Any, step: int) -> None:
        if not self.jobs or any(done.step == step for done in self.history):
            return
        with policy(trainer, self.tokenizer, self.params) as student:
            results = play(student, self.jobs, self.protocol, self.teacher)
        solved = SolvedByTurn.of((r.first_correct_turn for r in results), self.protocol.max_turns)
        report = HeldOutReport(step, solved)
        self.history.append(report)
        if self.on_log is not None and trainer.accelerator.is_main_process:
            self.on_log(report)


def _schedule_callback(rollouts: Rollouts, evaluation: _HeldOut, online: OnlineConfig) -> Any:
    from transformers import TrainerCallback

    class Schedule(TrainerCallback):  # type: ignore[misc]
        """Times each step's update and runs the held-out evaluations when they are due."""

        trainer: Any = None  # set once the trainer exists: the evaluation plays its model

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step == 0:
                evaluation.run(self.trainer, 0)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if rollouts.figures is not None:
                update_seconds = time.perf_counter() - rollouts.finished_at
                rollouts.figures = replace(rollouts.figures, update_seconds=update_seconds)
            if online.eval_every and state.global_step % online.eval_every == 0:
                evaluation.run(self.trainer, state.global_step)

    return Schedule()
