"""Online SML: the student trained by reinforcement over whole dialogues it plays (multi-turn
GRPO), and what the web side must agree on to launch it.

A step: ``tasks_per_step`` training tasks, ``group_size`` dialogues each (a group), played by the
policy as the student through the dialogue engine up to ``horizon`` student turns. A dialogue
solved at turn t earns ``gamma ** (t - 1)``, an unsolved one 0 (``dialogue_reward``); each
dialogue's advantage is its reward minus its group's mean, over the group's standard deviation;
the policy gradient runs over the student's sampled tokens only. With ``horizon`` 1 the same
machinery is single-turn RL, the papers' baseline: give it ``group_size * horizon`` dialogues per
task so both see the same generation budget (``single_turn_baseline``).

The optimizer-level settings (learning rate, LoRA or full, seed, device, precision, checkpoints,
epochs over the tasks, max steps) are ``spec.training.TrainingConfig``'s; this module holds what
only online training has. Standard library only: the web process imports it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from models_gpu.spec.settings import Problem, Setting, read_settings

ONLINE_SCHEMA_VERSION = 2  # 2: rollout_backend (schema 1 reads as transformers)
ROLLOUT_BACKENDS = ("transformers", "vllm")


@dataclass(frozen=True)
class OnlineConfig:
    """How dialogues are played and rewarded during online training (see ``ONLINE_SETTINGS``)."""

    group_size: int = 8
    tasks_per_step: int = 4
    horizon: int = 4
    gamma: float = 0.7
    beta: float = 0.0
    clip_epsilon: float = 0.2
    temperature: float = 1.0
    max_new_tokens: int = 64
    store_share: float = 0.25
    eval_every: int = 0
    rollout_backend: str = "transformers"

    def __post_init__(self) -> None:
        for setting in ONLINE_SETTINGS:  # 1 for 1.0: equal configurations hash alike
            value = getattr(self, setting.name)
            if setting.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, setting.name, float(value))

    @property
    def dialogues_per_step(self) -> int:
        return self.group_size * self.tasks_per_step

    def to_json(self) -> dict[str, Any]:
        return {"schema": ONLINE_SCHEMA_VERSION, **asdict(self)}

    def run_identity(self) -> dict[str, Any]:
        """What a training run's identity records of this configuration (``train_online``):
        rollouts on transformers as schema 1 wrote it, so that a run started before schema 2
        resumes after the upgrade instead of finding its directory claimed by another."""
        if self.rollout_backend != "transformers":
            return self.to_json()
        written = {key: value for key, value in asdict(self).items() if key != "rollout_backend"}
        return {"schema": 1, **written}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> OnlineConfig:
        """Strict: every setting must be there and fit (ValueError naming each problem)."""
        data = dict(data)
        schema = data.pop("schema", None)
        if schema == 1:  # written before the rollouts could play on vLLM
            data.setdefault("rollout_backend", "transformers")
            schema = ONLINE_SCHEMA_VERSION
        if schema != ONLINE_SCHEMA_VERSION:
            raise ValueError(
                f"online training configuration schema {schema!r}; this code reads "
                f"{ONLINE_SCHEMA_VERSION}"
            )
        missing = sorted({setting.name for setting in ONLINE_SETTINGS} - set(data))
        if missing:
            raise ValueError(f"online training configuration: missing {', '.join(missing)}")
        return cls(**read_settings(data, ONLINE_SETTINGS, owner="online training configuration"))

    def config_hash(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def problems(self) -> list[Problem]:
        return online_config_problems(asdict(self))


_D = OnlineConfig.__dataclass_fields__


def _setting(name: str, kind: Any, help: str, **bounds: Any) -> Setting:
    return Setting(name, kind, help, _D[name].default, **bounds)


ONLINE_SETTINGS: tuple[Setting, ...] = (
    _setting("group_size", "int",
             "Dialogues per task in a step (GRPO's group): advantages are normalised within it.",
             low=2, high=1024),
    _setting("tasks_per_step", "int", "Training tasks per optimizer step.", low=1, high=4096),
    _setting("horizon", "int",
             "Most student turns in a training dialogue (the papers train with 4 and evaluate "
             "up to 10); 1 is single-turn RL.", low=1, high=100),
    _setting("gamma", "float",
             "Reward of a dialogue solved at turn t: gamma^(t-1); unsolved: 0.", low=0,
             low_open=True, high=1),
    _setting("beta", "float", "Weight of the KL penalty to the base model (0: none, no "
             "reference model is kept).", low=0, high=10),
    _setting("clip_epsilon", "float", "PPO-style clipping of the probability ratio.", low=0,
             low_open=True, high=1),
    _setting("temperature", "float", "Sampling temperature of the student while it plays.",
             low=0, low_open=True, high=5),
    _setting("max_new_tokens", "int", "Longest student turn in tokens while it plays.", low=1,
             high=32768),
    _setting("store_share", "float",
             "Share of each step's dialogues kept with the run, to read and label (0: none).",
             low=0, high=1),
    _setting("eval_every", "int",
             "Evaluate on the held-out tasks every this many steps (0: only at the end).",
             low=0, high=1_000_000),
    _setting("rollout_backend", "choice",
             "What plays the policy's rollouts: transformers (the policy itself), or vLLM in the "
             "training process, given the policy's weights before every step (faster on long "
             "dialogues; needs vLLM on the worker).", choices=ROLLOUT_BACKENDS),
)  # fmt: skip

assert tuple(s.name for s in ONLINE_SETTINGS) == tuple(f.name for f in fields(OnlineConfig)), (
    "every field of OnlineConfig has exactly one Setting, in the same order"
)


def online_config_problems(data: Mapping[str, Any]) -> list[Problem]:
    """Every problem with an online configuration's values, each with its field."""
    values = {name: value for name, value in data.items() if name != "schema"}
    known = {setting.name for setting in ONLINE_SETTINGS}
    problems = [
        Problem(name, f"unknown online training setting {name!r}")
        for name in sorted(set(values) - known)
    ]
    for setting in ONLINE_SETTINGS:
        message = setting.problem(values[setting.name]) if setting.name in values else None
        if message:
            problems.append(Problem(setting.name, message))
    return problems


def dialogue_reward(first_correct_turn: int | None, gamma: float) -> float:
    """The conversation-level reward: ``gamma ** (t - 1)`` when solved at turn t, else 0."""
    return 0.0 if first_correct_turn is None else gamma ** (first_correct_turn - 1)


def single_turn_baseline(config: OnlineConfig) -> OnlineConfig:
    """Single-turn RL on the same generation budget: one turn, ``group_size * horizon``
    dialogues per task."""
    return replace(config, horizon=1, group_size=config.group_size * config.horizon)
