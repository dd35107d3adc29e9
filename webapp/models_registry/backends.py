"""What each model backend expects, as the web side knows it (it may not import model code).

Mirrors the backends in ``models_gpu.backends``; tests/webapp/test_run_config_models.py checks
the two agree where the model side says it in code (backend and scripted policy names).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class BackendInfo:
    label: str
    location_help: str
    # Known generation parameters and what they mean; any other key is refused by name, so a
    # typo cannot silently change results.
    params: Mapping[str, str] = field(default_factory=dict)
    required_params: tuple[str, ...] = ()
    available: bool = True


_SAMPLING = {
    "max_new_tokens": "tokens generated per reply",
    "temperature": "0 = greedy (default 0.7)",
    "top_p": "nucleus sampling",
    "top_k": "top-k sampling (-1 or 0: off)",
}
# A transformers or vLLM checkpoint loads on the worker that plays the run, so the web host may
# not have it: a missing directory is a warning there, not an error.
_CHECKPOINT_HELP = (
    "A checkpoint directory in Hugging Face format (config.json, tokenizer, weights), as seen "
    "from the GPU/worker host. It is checked on this web host only for a warning, because "
    "worker hosts may mount models at other paths."
)

BACKENDS: Mapping[str, BackendInfo] = {
    "scripted": BackendInfo(
        label="Scripted (programmatic)",
        location_help="The policy's name.",
        params={
            "first_try_accuracy": "arithmetic-student: chance of a right first answer (0.35)",
            "feedback_gain": "arithmetic-student: gain in that chance per feedback (0.45)",
            "ask_probability": "sharded-student: chance of asking while pieces are missing (0.5)",
            "final_accuracy": "sharded-student: chance of a right answer once complete (1.0)",
            "delay_ms": "every policy: wait this long per batched call (to test slow models)",
        },
    ),
    "transformers": BackendInfo(
        label="transformers (local checkpoint, CPU or CUDA)",
        location_help=_CHECKPOINT_HELP,
        params={
            **_SAMPLING,
            "repetition_penalty": "penalise repeated tokens (1.0 = off)",
            "device": "auto (CUDA when there is one), cpu, cuda, cuda:N",
            "dtype": "auto (by device), float32, bfloat16, float16",
            "micro_batch_size": "conversations per forward pass within one batched call (256)",
        },
    ),
    "vllm": BackendInfo(
        label="vLLM (offline, local checkpoint)",
        location_help=_CHECKPOINT_HELP,
        params={
            **_SAMPLING,
            "dtype": "auto, float32, bfloat16, float16",
            "max_model_len": "longest prompt + reply in tokens",
            "gpu_memory_utilization": "share of GPU memory vLLM may take (0-1)",
            "tensor_parallel_size": "GPUs to shard the model over",
            "enforce_eager": "true to skip CUDA graph capture",
            "kv_cache_gib": "KV cache size in GiB (vLLM on CPU)",
        },
    ),
    "openai": BackendInfo(
        label="OpenAI-compatible endpoint (HTTP)",
        location_help=(
            "The endpoint's base URL, e.g. http://127.0.0.1:8000/v1 (vllm serve), with no "
            "user:password@, ?query or #fragment: the key goes in an environment variable on "
            "the worker, named by api_key_env."
        ),
        params={
            "model": "the model name the endpoint serves (required)",
            "api_key_env": "name of the environment variable holding the API key on the worker "
            "(default OPENAI_API_KEY; unset: no key, as local servers expect)",
            "max_new_tokens": "tokens generated per reply (sent as max_tokens)",
            "temperature": "sampling temperature",
            "top_p": "nucleus sampling",
            "timeout_seconds": "per request (120)",
            "max_concurrency": "requests in flight at once (8)",
            "max_retries": "retries of a failed request (3)",
            "backoff_seconds": "first wait before a retry, doubled each time (1)",
        },
        required_params=("model",),
    ),
    "human": BackendInfo(
        label="Human (in the browser): not available yet",
        location_help="",
        available=False,
    ),
}

# Which scripted parameters each policy takes (every policy also takes delay_ms).
SCRIPTED_POLICY_PARAMS: Mapping[str, tuple[str, ...]] = {
    "arithmetic-student": ("first_try_accuracy", "feedback_gain"),
    "feedback-teacher": (),
    "sharded-student": ("ask_probability", "final_accuracy"),
    "shard-revealer": (),
}

# Mirrors models_gpu.backends.scripted.SCRIPTED_POLICIES.
SCRIPTED_POLICIES: Mapping[str, str] = {
    "arithmetic-student": "student: solves arithmetic, errs at a tunable rate",
    "feedback-teacher": "teacher: feedback from the verifier's details, never the answer",
    "sharded-student": "student: asks for the next piece until the task is complete",
    "shard-revealer": "user simulator: reveals the next shard of a sharded task",
}

# Parameter names that would hold a secret. Keys are never stored in Dialab: a model names the
# environment variable that holds it on the worker (``api_key_env``).
SECRET_PARAM = re.compile(r"(api[_-]?key|secret|token|password|authori[sz]ation|bearer)$", re.I)
SECRET_VALUE = re.compile(r"^(sk-|Bearer\s)", re.I)
ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# As models_gpu.devices accepts them.
DEVICE_NAME = re.compile(r"auto|cpu|cuda(:\d+)?")
DTYPES = ("auto", "float32", "bfloat16", "float16")
