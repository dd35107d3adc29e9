"""Fine-tuning a student on stored dialogues: the methods, the configuration, the input rows.

The web side builds its training form from ``TRAINING_SETTINGS`` (one ``Setting`` per field of
``TrainingConfig``, with range and help; ``SETTING_APPLIES`` says which fields matter only for
one method or one kind of fine-tuning), refuses a configuration while
``training_config_problems`` finds anything, stores ``to_json()`` and ``config_hash()``, and
streams the chosen dialogues to the worker as ``TrainingDialogue`` rows. The worker rebuilds the
configuration with ``TrainingConfig.from_json`` and trains (``models_gpu.training``).

Methods (``METHODS``; the exact message layouts are in ``models_gpu.training.encode``):
    sft       Offline SML: supervised fine-tuning on the student's turns only; the system prompt,
              the task, the teacher's and the user's turns are context (not trained).
    critique  Critique prediction (RL²F): the whole public dialogue, the student's turns AND the
              teacher's turns are trained; each teacher turn is laid out as the student's answer
              to the self-critique instruction, as the self-correction protocol's critique mode
              asks for it. The teacher's private context never appears in the input.
    qpriming  Q-priming: each failed student attempt is replaced, with probability
              ``qpriming_decay ** t`` in round t, by a clarifying question written with access to
              the private knowledge (``qpriming_question_template``), then SFT on the student's
              turns.

Standard library only (an import-linter contract): the web process imports this module.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from models_gpu.spec.backends import DEVICE_PATTERN
from models_gpu.spec.results import TurnRow
from models_gpu.spec.run import MAX_SEED, exact_keys
from models_gpu.spec.settings import Problem, Setting
from models_gpu.spec.templates import DEFAULT_TEMPLATES

TRAINING_SCHEMA_VERSION = 1

MethodId = Literal["sft", "critique", "qpriming"]
Finetuning = Literal["full", "lora"]
Precision = Literal["auto", "float32", "bfloat16"]
LrScheduler = Literal["linear", "cosine", "constant"]


@dataclass(frozen=True)
class TrainingMethod:
    """A training method as the training form shows it."""

    label: str
    help: str


METHODS: Mapping[str, TrainingMethod] = {
    "sft": TrainingMethod(
        "Offline SML (SFT on student turns)",
        "Supervised fine-tuning on the student's turns only; the teacher's and the user's turns "
        "are context.",
    ),
    "critique": TrainingMethod(
        "Critique prediction (student and teacher turns)",
        "Trains the whole public dialogue, the teacher's feedback included (never its private "
        "knowledge), so the student learns to critique its own attempts.",
    ),
    "qpriming": TrainingMethod(
        "Q-priming (failed attempts become questions, then SFT)",
        "Replaces failed attempts, with probability decay^t in round t, by a clarifying "
        "question, then fine-tunes on the student's turns: teaches the student to ask.",
    ),
}

DEFAULT_QUESTION_TEMPLATE = "Before I answer: could you tell me more about what is expected?"
# What ``{...}`` may name in the Q-priming question template; ``{reference.KEY}`` names one key.
QUESTION_PLACEHOLDERS: tuple[str, ...] = ("task_prompt", "reference", "round")
_QUESTION_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z0-9_-]+))?\}")


class TrainingConfigError(ValueError):
    """A training configuration that cannot run; ``problems`` says what, field by field."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.field}: {p.message}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class TrainingConfig:
    """How a student is fine-tuned; every field is a ``Setting`` of ``TRAINING_SETTINGS`` (whose
    help says what it means). Frozen at launch, stored as JSON with its hash."""

    method: MethodId = "sft"
    learning_rate: float = 2e-5
    epochs: int = 1
    max_steps: int = 0
    batch_size: int = 8
    gradient_accumulation_steps: int = 1
    max_length: int = 2048
    warmup_ratio: float = 0.0
    weight_decay: float = 0.0
    lr_scheduler: LrScheduler = "linear"
    finetuning: Finetuning = "full"
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    gradient_checkpointing: bool = True
    seed: int = 0
    save_steps: int = 500
    keep_checkpoints: int = 2
    logging_steps: int = 10
    device: str = "auto"
    precision: Precision = "auto"
    critique_instruction: str = DEFAULT_TEMPLATES["self_critique"]
    qpriming_decay: float = 0.75
    qpriming_question_template: str = DEFAULT_QUESTION_TEMPLATE

    def __post_init__(self) -> None:
        # A float setting given a whole number (1 for 1.0) is stored as a float, so that equal
        # configurations have equal JSON and hashes.
        for setting in TRAINING_SETTINGS:
            value = getattr(self, setting.name)
            if setting.kind == "float" and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, setting.name, float(value))

    def to_json(self) -> dict[str, Any]:
        """Plain JSON-ready data; ``from_json`` reads it back to an equal configuration."""
        return {"schema": TRAINING_SCHEMA_VERSION, **asdict(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, strict: bool = True) -> TrainingConfig:
        """Read a configuration back, checked (``TrainingConfigError`` listing every problem).

        strict (the default, what a worker uses): a missing key is an error, never a silent
        default. ``strict=False`` fills missing keys with their defaults (a configuration
        stored before a setting existed; a form that leaves fields out). An unknown key is
        always an error: a misspelt setting must not silently fall back to its default.
        """
        data = dict(data)
        schema = data.pop("schema", TRAINING_SCHEMA_VERSION if not strict else None)
        if schema != TRAINING_SCHEMA_VERSION:
            raise ValueError(
                f"training configuration schema {schema!r}; this code reads "
                f"{TRAINING_SCHEMA_VERSION}"
            )
        missing = sorted(set(SETTINGS_BY_NAME) - set(data))
        if strict and missing:
            raise TrainingConfigError(
                [Problem(name, f"{name} is missing from the configuration") for name in missing]
            )
        problems = training_config_problems(data)
        if problems:
            raise TrainingConfigError(problems)
        return cls(
            **{name: SETTINGS_BY_NAME[name].normalise(value) for name, value in data.items()}
        )

    def config_hash(self) -> str:
        """Identifies identical configurations (sha256 of the canonical JSON)."""
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def problems(self) -> list[Problem]:
        """What is wrong with this configuration (a dataclass built in code is not checked)."""
        return training_config_problems(asdict(self))


_D = TrainingConfig.__dataclass_fields__  # the defaults, read below: each is written once


def _default(name: str) -> Any:
    return _D[name].default


def _setting(name: str, kind: Any, help: str, **bounds: Any) -> Setting:
    return Setting(name, kind, help, _default(name), **bounds)


TRAINING_SETTINGS: tuple[Setting, ...] = (
    _setting("method", "choice", "How dialogues become training examples (see the methods).",
             choices=tuple(METHODS)),
    _setting("learning_rate", "float",
             "Peak learning rate of AdamW (full fine-tuning: about 1e-5 to 5e-5; LoRA: about "
             "1e-4 to 3e-4).", low=0, low_open=True, high=1),
    _setting("epochs", "int", "Passes over the dialogues (when max_steps is 0).", low=1,
             high=1000),
    _setting("max_steps", "int",
             "Optimizer steps to take; 0: as many as the epochs need.", low=0, high=10_000_000),
    _setting("batch_size", "int", "Dialogues per forward pass.", low=1, high=4096),
    _setting("gradient_accumulation_steps", "int",
             "Forward passes per optimizer step (the effective batch is batch_size times this).",
             low=1, high=1024),
    _setting("max_length", "int",
             "Longest example in tokens; a longer dialogue is cut from the right (its end is "
             "dropped).", low=16, high=1_048_576),
    _setting("warmup_ratio", "float",
             "Share of the steps over which the learning rate rises linearly from 0.", low=0,
             high=0.9),
    _setting("weight_decay", "float", "AdamW's decoupled weight decay.", low=0, high=1),
    _setting("lr_scheduler", "choice", "How the learning rate falls after the warm-up.",
             choices=("linear", "cosine", "constant")),
    _setting("finetuning", "choice",
             "full: every weight is trained; lora: low-rank adapters, merged into the weights "
             "at the end (for pretrained bases: on a random model they barely learn).",
             choices=("full", "lora")),
    _setting("lora_r", "int", "LoRA rank.", low=1, high=1024),
    _setting("lora_alpha", "int", "LoRA scaling (the update is scaled by alpha / r).", low=1,
             high=4096),
    _setting("lora_dropout", "float", "Dropout on the LoRA branch.", low=0, high=0.9),
    _setting("gradient_checkpointing", "bool",
             "Recompute activations in the backward pass: less memory, about a third slower."),
    _setting("seed", "int", "Seeds the initialisation of adapters, the data order, dropout and "
             "Q-priming's draws.", low=0, high=MAX_SEED),
    _setting("save_steps", "int",
             "Save a resumable checkpoint every this many optimizer steps.", low=1,
             high=10_000_000),
    _setting("keep_checkpoints", "int", "Checkpoints kept on disk (the oldest are deleted).",
             low=1, high=1000),
    _setting("logging_steps", "int", "Report the loss every this many optimizer steps.", low=1,
             high=1_000_000),
    _setting("device", "str", "auto (CUDA when there is one), cpu, cuda, cuda:N",
             pattern=DEVICE_PATTERN, pattern_help="auto, cpu, cuda or cuda:N"),
    _setting("precision", "choice",
             "auto: bfloat16 mixed precision where the hardware has it, else float32; "
             "bfloat16: mixed precision (float32 master weights; LoRA keeps a bfloat16 base).",
             choices=("auto", "float32", "bfloat16")),
    _setting("critique_instruction", "str",
             "Critique prediction: the user message before each teacher turn. Make it the "
             "self_critique template of the protocol the model will be evaluated with.",
             low=1, high=4000),
    _setting("qpriming_decay", "float",
             "Q-priming: a failed attempt in round t becomes a question with probability "
             "decay^t.", low=0, high=1),
    _setting("qpriming_question_template", "str",
             "Q-priming: the clarifying question. {task_prompt}, {round}, {reference} (the "
             "private reference) and {reference.KEY} (one of its keys) are filled in; no other "
             "name may stand in braces.", low=1, high=4000),
)  # fmt: skip
SETTINGS_BY_NAME: Mapping[str, Setting] = {setting.name: setting for setting in TRAINING_SETTINGS}
# Settings that matter only when another setting has a given value (a form may hide them).
SETTING_APPLIES: Mapping[str, tuple[str, str]] = {
    "lora_r": ("finetuning", "lora"),
    "lora_alpha": ("finetuning", "lora"),
    "lora_dropout": ("finetuning", "lora"),
    "critique_instruction": ("method", "critique"),
    "qpriming_decay": ("method", "qpriming"),
    "qpriming_question_template": ("method", "qpriming"),
}

assert tuple(SETTINGS_BY_NAME) == tuple(f.name for f in fields(TrainingConfig)), (
    "every field of TrainingConfig has exactly one Setting, in the same order"
)


def training_config_problems(data: Mapping[str, Any]) -> list[Problem]:
    """Every problem with a training configuration's values (``data``: a mapping of setting
    names, like ``to_json()`` or a form's cleaned data; missing names mean their defaults), each
    with the field it is about. Empty: none."""
    values = {name: value for name, value in data.items() if name != "schema"}
    problems = [
        Problem(name, f"unknown training setting {name!r}")
        for name in sorted(set(values) - set(SETTINGS_BY_NAME))
    ]
    for name, setting in SETTINGS_BY_NAME.items():
        if name in values:
            message = setting.problem(values[name])
            if message:
                problems.append(Problem(name, message))
    template = values.get("qpriming_question_template")
    if isinstance(template, str):
        unknown = question_template_unknown_names(template)
        if unknown:
            problems.append(
                Problem(
                    "qpriming_question_template",
                    f"unknown placeholder(s) {', '.join(unknown)}; known: "
                    + ", ".join(f"{{{name}}}" for name in QUESTION_PLACEHOLDERS)
                    + ", {reference.KEY}",
                )
            )
    return problems


def question_template_unknown_names(template: str) -> list[str]:
    """The ``{...}`` names in ``template`` that the question writer would not fill in."""
    unknown = []
    for match in _QUESTION_PLACEHOLDER.finditer(template):
        name, key = match[1], match[2]
        if name not in QUESTION_PLACEHOLDERS or (key is not None and name != "reference"):
            unknown.append(match[0])
    return unknown


def render_question(
    template: str, *, task_prompt: str, reference: Mapping[str, Any], round_number: int
) -> str:
    """The Q-priming question: ``template`` with its placeholders filled in.

    ``{reference}`` is the reference's only value when it has one key (``{"answer": 42}`` gives
    "42"), else its canonical JSON; ``{reference.KEY}`` is one value (a string as is, anything
    else as JSON); a KEY the reference lacks is a ValueError naming it.
    """

    def fill(match: re.Match[str]) -> str:
        name, key = match[1], match[2]
        if name == "task_prompt" and key is None:
            return task_prompt
        if name == "round" and key is None:
            return str(round_number)
        if name == "reference" and key is None:
            if len(reference) == 1:
                return _text(next(iter(reference.values())))
            return json.dumps(dict(reference), sort_keys=True, default=str)
        if name == "reference" and key is not None:
            if key not in reference:
                raise ValueError(
                    f"the question template names {{reference.{key}}}, but this reference has "
                    f"no key {key!r} (keys: {', '.join(map(str, reference)) or 'none'})"
                )
            return _text(reference[key])
        return match[0]

    return _QUESTION_PLACEHOLDER.sub(fill, template)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


@dataclass(frozen=True)
class TrainingDialogue:
    """One stored dialogue as training reads it (the web side streams these from the database).

    dialogue_id: the stored dialogue's id (provenance; Q-priming seeds its draws with it).
    student_system: the student's rendered system prompt as the run sent it ("" for none).
    task_prompt: the task as the student saw it (not shown when ``sharded``: the shards are).
    sharded: the dialogue came from the sharded protocol (the student never saw task_prompt).
    reference: the task's private knowledge (only Q-priming's question writer reads it).
    turns: the stored turns in order: role (student, teacher, user, system), kind, text,
        private_context (never shown to the student), is_correct, round.
    """

    dialogue_id: int
    student_system: str
    task_prompt: str
    sharded: bool
    reference: Mapping[str, Any]
    turns: tuple[TurnRow, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TrainingDialogue:
        """From plain data with the same keys (turns as a list of ``TurnRow`` mappings); a key
        missing or unknown is a ValueError naming it."""
        exact_keys(cls, data, "training dialogue")
        turn_names = {f.name for f in fields(TurnRow)}
        turns = []
        for position, turn in enumerate(data["turns"]):
            extra = sorted(set(turn) - turn_names)
            if extra:
                raise ValueError(f"training dialogue turn {position}: unknown keys {extra}")
            try:
                turns.append(TurnRow(**turn))
            except TypeError as error:
                raise ValueError(f"training dialogue turn {position}: {error}") from None
        return cls(**{**data, "turns": tuple(turns)})
