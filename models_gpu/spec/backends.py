"""Model backends: their names, what their location means, and their parameters with ranges.

The model registry's form validates a model's parameters through ``backend_problems``; each
backend reads them through ``read_backend_params`` when it loads. A parameter with a default of
None is passed to the library only when given. Both also apply the operator's rule on which
environment variable an ``openai`` model may name for its key (``models_gpu.spec.credentials``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from models_gpu.spec.credentials import key_env_problem
from models_gpu.spec.settings import Problem, Setting, read_settings, settings_problems

DEVICE_PATTERN = r"auto|cpu|cuda(:\d+)?"
DTYPES = ("auto", "float32", "bfloat16", "float16")
ENV_VAR_PATTERN = r"[A-Za-z_][A-Za-z0-9_]*"
_API_KEY_ENV_DEFAULT = "OPENAI_API_KEY"


@dataclass(frozen=True)
class Backend:
    name: str
    label: str
    location_help: str
    params: tuple[Setting, ...] = ()


def _sampling(*, temperature: float, max_new_tokens: int) -> tuple[Setting, ...]:
    return (
        Setting("max_new_tokens", "int", "tokens generated per reply", max_new_tokens, low=1),
        Setting("temperature", "float", "0 = greedy", temperature, low=0),
        Setting("top_p", "float", "nucleus sampling", 1.0, low=0, low_open=True, high=1),
    )


_TOP_K = Setting("top_k", "int", "top-k sampling (-1 or 0: off)", -1, low=-1)
_DTYPE = Setting(
    "dtype", "choice", "weights' dtype; auto chooses by device", "auto", choices=DTYPES
)
# A transformers or vLLM checkpoint loads on the worker that plays the run, so the web host may
# not have it: a missing directory is a warning there, not an error.
_CHECKPOINT_HELP = (
    "A checkpoint directory in Hugging Face format (config.json, tokenizer, weights), as seen "
    "from the GPU/worker host. It is checked on this web host only for a warning, because "
    "worker hosts may mount models at other paths."
)
_DELAY = Setting(
    "delay_ms", "float", "wait this long per batched call (to test slow models)", 0.0, low=0
)


def _probability(name: str, help: str, default: float) -> Setting:
    return Setting(name, "float", help, default, low=0, high=1)


@dataclass(frozen=True)
class ScriptedPolicy:
    role: str
    help: str
    params: tuple[Setting, ...] = ()


# The scripted backend's policies (``RoleSpec.location``), each with its own parameters; every
# policy also takes ``delay_ms``.
SCRIPTED_POLICIES: Mapping[str, ScriptedPolicy] = {
    "arithmetic-student": ScriptedPolicy(
        "student",
        "solves arithmetic, errs at a tunable rate",
        (
            _probability("first_try_accuracy", "chance of a right first answer", 0.35),
            _probability("feedback_gain", "gain in that chance per feedback", 0.45),
        ),
    ),
    "feedback-teacher": ScriptedPolicy(
        "teacher", "feedback from the verifier's details, never the answer"
    ),
    "answer-revealer": ScriptedPolicy(
        "teacher", "states the answer after a wrong attempt (a check of training, not a teacher)"
    ),
    "sharded-student": ScriptedPolicy(
        "student",
        "asks for the next piece until the task is complete",
        (
            _probability("ask_probability", "chance of asking while pieces are missing", 0.5),
            _probability("final_accuracy", "chance of a right answer once complete", 1.0),
        ),
    ),
    "shard-revealer": ScriptedPolicy(
        "user simulator", "reveals the next shard of a sharded task"
    ),
}  # fmt: skip

BACKENDS: Mapping[str, Backend] = {
    "scripted": Backend(
        name="scripted",
        label="Scripted (programmatic)",
        location_help="The policy's name.",
        params=(
            _DELAY,
            *(param for policy in SCRIPTED_POLICIES.values() for param in policy.params),
        ),
    ),
    "transformers": Backend(
        name="transformers",
        label="transformers (local checkpoint, CPU or CUDA)",
        location_help=_CHECKPOINT_HELP,
        params=(
            *_sampling(temperature=0.7, max_new_tokens=64),
            _TOP_K,
            Setting("repetition_penalty", "float", "penalise repeated tokens (1.0 = off)", 1.0,
                    low=0, low_open=True),
            Setting("device", "str", "auto (CUDA when there is one), cpu, cuda, cuda:N", "auto",
                    pattern=DEVICE_PATTERN, pattern_help="auto, cpu, cuda or cuda:N"),
            _DTYPE,
            Setting("micro_batch_size", "int",
                    "conversations per forward pass within one batched call", 256, low=1),
            Setting("prefix_cache_mib", "int",
                    "keys and values kept between calls, so a dialogue's next round prefills "
                    "only its new tokens (0 = off)", 1024, low=0),
        ),
    ),
    "vllm": Backend(
        name="vllm",
        label="vLLM (offline, local checkpoint)",
        location_help=_CHECKPOINT_HELP,
        params=(
            *_sampling(temperature=0.7, max_new_tokens=256),
            _TOP_K,
            _DTYPE,
            Setting("max_model_len", "int", "longest prompt + reply in tokens", None, low=1),
            Setting("gpu_memory_utilization", "float", "share of GPU memory vLLM may take",
                    None, low=0, low_open=True, high=1),
            Setting("tensor_parallel_size", "int", "GPUs to shard the model over", 1, low=1),
            Setting("enforce_eager", "bool", "true to skip CUDA graph capture", False),
            Setting("kv_cache_gib", "float", "KV cache size in GiB (vLLM on CPU)", None, low=0,
                    low_open=True),
            Setting("block_size", "int", "tokens per KV-cache block; the prefix cache reuses "
                    "whole blocks (default: vLLM's on a GPU, 32 on CPU)", None, low=1),
        ),
    ),
    "openai": Backend(
        name="openai",
        label="OpenAI-compatible endpoint (HTTP)",
        location_help=(
            "The endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (vllm serve), with no "
            "user:password@, ?query or #fragment: the key goes in an environment variable on "
            "the worker, named by api_key_env."
        ),
        params=(
            Setting("model", "str", "the model name the endpoint serves", None, low=1,
                    required=True),
            Setting("api_key_env", "str",
                    "name of the environment variable holding the API key on the worker "
                    "(unset: no key, as local servers expect); only names the operator allows: "
                    "OPENAI_API_KEY and DIALAB_MODEL_KEY_* unless configured otherwise",
                    _API_KEY_ENV_DEFAULT,
                    pattern=ENV_VAR_PATTERN,
                    pattern_help="the NAME of an environment variable (letters, digits, "
                    "underscores), never the key itself", conceal=True),
            *_sampling(temperature=0.7, max_new_tokens=256),
            Setting("timeout_seconds", "float", "per request", 120.0, low=0, low_open=True),
            Setting("max_concurrency", "int", "requests in flight at once", 8, low=1),
            Setting("max_retries", "int", "retries of a failed request", 3, low=0),
            Setting("backoff_seconds", "float", "first wait before a retry, doubled each time",
                    1.0, low=0),
        ),
    ),
    "human": Backend(
        name="human",
        label="A person, in the browser",
        location_help="Nothing: who answers is chosen per run (its people).",
    ),
}  # fmt: skip


def backend_params(backend: str, location: str) -> tuple[Setting, ...]:
    """The parameters a model of ``backend`` at ``location`` takes (a scripted policy takes
    its own and ``delay_ms``)."""
    if backend == "scripted":
        policy = SCRIPTED_POLICIES.get(location)
        return (_DELAY, *(policy.params if policy else ()))
    return BACKENDS[backend].params


def backend_problems(backend: str, location: str, params: Mapping[str, Any]) -> list[Problem]:
    """What is wrong with a model's ``backend``, ``location`` and ``params`` (those are the
    problems' fields; empty: nothing)."""
    if backend not in BACKENDS:
        known = ", ".join(BACKENDS)
        return [Problem("backend", f"unknown backend {backend!r}; backends: {known}")]
    if backend == "scripted" and location not in SCRIPTED_POLICIES:
        policies = ", ".join(SCRIPTED_POLICIES)
        return [Problem("location", f"a scripted model names its policy: one of {policies}")]
    problems = settings_problems(params, backend_params(backend, location), noun="parameter")
    problems += _key_env_problems(backend, params)
    return [Problem("params", problem) for problem in problems]


def read_backend_params(backend: str, location: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter of the backend, given or default; ValueError naming each problem."""
    if backend == "scripted" and location not in SCRIPTED_POLICIES:
        raise ValueError(
            f"scripted backend has no policy {location!r}; "
            f"known policies: {', '.join(SCRIPTED_POLICIES)}"
        )
    schema = backend_params(backend, location)
    values = read_settings(params, schema, owner=f"{backend} backend", noun="parameter")
    refused = _key_env_problems(backend, values)
    if refused:
        raise ValueError(f"{backend} backend: {refused[0]}")
    return values


def _key_env_problems(backend: str, params: Mapping[str, Any]) -> list[str]:
    """The operator's rule on the variable that holds a model's key
    (``models_gpu.spec.credentials``), for the name given or the default one. A value that is not
    a variable's name at all is the schema's problem, already stated."""
    if backend != "openai":
        return []
    name = params.get("api_key_env", _API_KEY_ENV_DEFAULT)
    if not isinstance(name, str) or not re.fullmatch(ENV_VAR_PATTERN, name):
        return []
    problem = key_env_problem(name)
    return [problem] if problem else []
