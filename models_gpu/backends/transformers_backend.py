"""The ``transformers`` backend: a local Hugging Face checkpoint on CPU or CUDA, batched.

``load_transformers(RoleSpec("transformers", "/path/to/checkpoint", params))``. A batch of requests
becomes chat-template prompts (``tokenizer.apply_chat_template`` on ``chat_messages(request)``),
sorted by length, cut into micro-batches, left-padded, and each micro-batch is ONE
``model.generate`` call under ``torch.inference_mode``.

Params: ``models_gpu.spec.backends.BACKENDS["transformers"]`` (names, defaults, ranges; any
other key is refused by name). A request's own ``max_new_tokens`` caps the param further; dtype
"auto" is bfloat16 on CUDA and float32 on CPU (``models_gpu.devices``); batches bigger than
``micro_batch_size`` are split, shortest prompts together.

The checkpoint's own ``generation_config.json`` sampling defaults are not used: these params, with
the defaults above, decide. Its end-of-sequence ids are (with the tokenizer's).

Later rounds: the generator keeps each dialogue's keys and values from its last call (up to
``prefix_cache_mib``), so a round prefills only what was added since the dialogue's last round
(``models_gpu.backends.prefix_cache``); ``cached_prompt_tokens`` says how many were reused.

Results: ``text`` is the new tokens up to the first end-of-sequence token, decoded without
special tokens. ``prompt_tokens`` counts the prompt's real tokens (no padding);
``completion_tokens`` the new tokens up to and including that first end-of-sequence token, and
``token_ids`` those very ids. ``latency_ms`` is the wall time of the micro-batch's ``generate``
call, the same for every request in it (each reply waited that long).

Seeding: each request samples from its own random stream, seeded by its ``seed`` and its number of
messages (so every turn of a dialogue draws afresh). One uniform number per generated position
picks the token by inverse CDF, so a reply does not depend on the other requests in the batch or
on their order — as far as its logits do not: left padding and batch shape can change the
low-order bits of the logits (more so on CUDA), which can on rare near-ties flip a token.
Greedy decoding (temperature 0) needs no seed.

Models are shared: generators on the same checkpoint, device and dtype (a student and a teacher
that are the same model with different sampling) hold one copy, used under a lock.
"""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models_gpu.backends.prefix_cache import Layout, PrefixCache, Row, lay_out, prefixes_after
from models_gpu.backends.prompting import chat_messages
from models_gpu.devices import resolve_device, resolve_dtype
from models_gpu.spec.backends import read_backend_params
from models_gpu.spec.run import RoleSpec
from models_gpu.types import Generation, GenerationRequest

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class TransformersOptions:
    """The validated params (see the module docstring for what each means)."""

    temperature: float
    top_p: float
    top_k: int  # 0: off
    repetition_penalty: float
    max_new_tokens: int
    device: str
    dtype: str
    micro_batch_size: int
    prefix_cache_mib: int


def parse_params(params: Mapping[str, Any]) -> TransformersOptions:
    """Check ``params`` (unknown keys, types, ranges) before anything heavy is imported."""
    values = read_backend_params("transformers", "", params)
    return TransformersOptions(**{**values, "top_k": max(values["top_k"], 0)})


def check_checkpoint(location: str) -> Path:
    """``location`` as a directory that holds a Hugging Face checkpoint, else ValueError."""
    if not location:
        raise ValueError("transformers backend: location must be a checkpoint directory")
    path = Path(location).expanduser()
    if not path.is_dir():
        raise ValueError(f"transformers backend: checkpoint directory {location!r} does not exist")
    if not (path / "config.json").is_file():
        raise ValueError(
            f"transformers backend: {location!r} is not a Hugging Face checkpoint "
            "(it has no config.json)"
        )
    return path


class _LoadedModel:
    """A model and tokenizer in memory, shared by the generators that use them."""

    def __init__(self, model: Any, tokenizer: Any, device: torch.device) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.eos_ids = _eos_ids(model, tokenizer)
        pad_id = tokenizer.pad_token_id
        self.pad_id: int = pad_id if pad_id is not None else min(self.eos_ids)
        self.lock = threading.Lock()

    @classmethod
    def load(cls, path: Path, device: torch.device, dtype: torch.dtype) -> _LoadedModel:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        if not tokenizer.chat_template:
            raise ValueError(
                f"transformers backend: the tokenizer in {str(path)!r} has no chat template; "
                "Dialab sends conversations, so it needs a chat (instruction-tuned) checkpoint"
            )
        tokenizer.padding_side = "left"
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
        return cls(model.to(device).eval(), tokenizer, device)


_MODELS: weakref.WeakValueDictionary[tuple[str, str, str], _LoadedModel] = (
    weakref.WeakValueDictionary()
)
_MODELS_LOCK = threading.Lock()


def _load_model(path: Path, options: TransformersOptions) -> _LoadedModel:
    device = resolve_device(options.device)
    dtype = resolve_dtype(options.dtype, device)
    key = (str(path.resolve()), str(device), str(dtype))
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            loaded = _LoadedModel.load(path, device, dtype)
            _MODELS[key] = loaded
        return loaded


class TransformersGenerator:
    def __init__(self, location: str, options: TransformersOptions, loaded: _LoadedModel) -> None:
        self.location = location
        self.options = options
        self._loaded = loaded
        # Keys and values of each dialogue's last call (prefix_cache.py); None when turned off.
        self._prefixes = (
            PrefixCache(options.prefix_cache_mib * 2**20) if options.prefix_cache_mib else None
        )

    def __repr__(self) -> str:
        return f"TransformersGenerator(location={self.location!r}, options={self.options!r})"

    @property
    def device(self) -> torch.device:
        return self._loaded.device

    def prompts(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """The text each request becomes: its chat messages (private context in the system
        turn) through the checkpoint's chat template, opening the assistant's turn."""
        rendered = self._loaded.tokenizer.apply_chat_template(
            [chat_messages(request) for request in requests],
            tokenize=False,
            add_generation_prompt=True,
        )
        return [str(text) for text in rendered]

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        if not requests:
            return []
        # The template writes any BOS itself; the tokenizer must not add a second one.
        prompt_ids: list[list[int]] = self._loaded.tokenizer(
            self.prompts(requests), add_special_tokens=False
        )["input_ids"]
        with self._loaded.lock:
            rows = [
                self._row(request, ids) for request, ids in zip(requests, prompt_ids, strict=True)
            ]
            # Similar lengths share a micro-batch, so little compute goes to padding.
            order = sorted(
                range(len(rows)), key=lambda index: (rows[index].new, len(rows[index].ids))
            )
            results: dict[int, Generation] = {}
            size = self.options.micro_batch_size
            for start in range(0, len(order), size):
                chunk = order[start : start + size]
                generations = self._generate_micro_batch(
                    [requests[index] for index in chunk], [rows[index] for index in chunk]
                )
                results.update(zip(chunk, generations, strict=True))
        return [results[index] for index in range(len(requests))]

    def forget_prefixes(self) -> None:
        """Drop every kept prefix (a benchmark measures each arm from a cold cache)."""
        if self._prefixes is not None:
            self._prefixes = PrefixCache(self._prefixes.budget_bytes)

    def _row(self, request: GenerationRequest, ids: list[int]) -> Row:
        """The prompt with what of it the dialogue's last call already computed."""
        if self._prefixes is None:
            return Row(ids, None, 0)
        return Row(ids, *self._prefixes.reusable(request.seed, ids))

    def _generate_micro_batch(
        self, requests: list[GenerationRequest], rows: list[Row]
    ) -> list[Generation]:
        import torch

        loaded = self._loaded
        caps = [min(self.options.max_new_tokens, request.max_new_tokens) for request in requests]
        layout = lay_out(rows, loaded.pad_id, loaded.device)
        kwargs = self._generate_kwargs(requests, max(caps))
        with torch.inference_mode():
            started = time.perf_counter()
            output = loaded.model.generate(
                input_ids=layout.input_ids,
                attention_mask=layout.attention_mask,
                past_key_values=layout.past,
                return_dict_in_generate=True,
                **kwargs,
            )
            new_tokens: list[list[int]] = output.sequences[:, layout.width :].tolist()
            latency_ms = (time.perf_counter() - started) * 1000
            generations = [
                self._generation(ids[:cap], row, latency_ms)
                for ids, cap, row in zip(new_tokens, caps, rows, strict=True)
            ]
            if self._prefixes is not None:
                self._keep_prefixes(requests, layout, output.past_key_values, generations)
        return generations

    def _keep_prefixes(
        self,
        requests: list[GenerationRequest],
        layout: Layout,
        cache: Any,
        generations: list[Generation],
    ) -> None:
        assert self._prefixes is not None
        prefixes = prefixes_after(layout, cache, [g.token_ids for g in generations])
        if prefixes is None:  # not all full-attention layers: this model prefills in full
            self._prefixes = None
            return
        for request, prefix in zip(requests, prefixes, strict=True):
            self._prefixes.store(request.seed, prefix)

    def _generate_kwargs(
        self, requests: list[GenerationRequest], max_new_tokens: int
    ) -> dict[str, Any]:
        from transformers import LogitsProcessorList

        options = self.options
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "eos_token_id": sorted(self._loaded.eos_ids),
            "pad_token_id": self._loaded.pad_id,
            "repetition_penalty": options.repetition_penalty,
            # Sampling happens in SeededSampler, which leaves one finite logit per row; generate
            # itself only ever takes the argmax.
            "do_sample": False,
        }
        if options.temperature > 0:
            sampler = SeededSampler(
                [random.Random(f"{r.seed}:{len(r.messages)}") for r in requests],
                temperature=options.temperature,
                top_p=options.top_p,
                top_k=options.top_k,
            )
            kwargs["logits_processor"] = LogitsProcessorList([sampler])
        return kwargs

    def _generation(self, new_ids: list[int], row: Row, latency_ms: float) -> Generation:
        eos_ids = self._loaded.eos_ids
        end = next((i for i, token in enumerate(new_ids) if token in eos_ids), None)
        text_ids = new_ids if end is None else new_ids[:end]
        sampled = new_ids if end is None else new_ids[: end + 1]
        return Generation(
            text=self._loaded.tokenizer.decode(text_ids, skip_special_tokens=True),
            prompt_tokens=len(row.ids),
            completion_tokens=len(sampled),
            latency_ms=latency_ms,
            token_ids=tuple(sampled),
            cached_prompt_tokens=row.reused,
        )


class SeededSampler:
    """A logits processor that samples each row from its own ``random.Random`` stream and leaves
    only the chosen token's logit finite, so greedy decoding then takes it.

    Temperature, top-k and top-p (nucleus) are applied in that order; one uniform number per row
    and position picks a token by inverse CDF over the remaining probabilities.
    """

    def __init__(
        self, streams: list[random.Random], *, temperature: float, top_p: float, top_k: int
    ) -> None:
        self.streams = streams
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        import torch

        logits = scores.float() / self.temperature
        if 0 < self.top_k < logits.shape[-1]:
            kth_best = torch.topk(logits, self.top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth_best, float("-inf"))
        probabilities = torch.softmax(logits, dim=-1)
        candidates: torch.Tensor | None = None
        if self.top_p < 1.0:
            probabilities, candidates = torch.sort(probabilities, dim=-1, descending=True)
            before = probabilities.cumsum(dim=-1) - probabilities  # mass of the likelier tokens
            probabilities = probabilities.masked_fill(before >= self.top_p, 0.0)
        # float64, so that u * total stays below the total and lands on a token with mass.
        uniforms = torch.tensor(
            [stream.random() for stream in self.streams], dtype=torch.float64, device=scores.device
        ).unsqueeze(-1)
        cdf = probabilities.double().cumsum(dim=-1)
        picked = torch.searchsorted(cdf, uniforms * cdf[:, -1:], right=True)
        picked = picked.clamp(max=probabilities.shape[-1] - 1)
        if candidates is not None:
            picked = candidates.gather(-1, picked)
        chosen = torch.full_like(scores, float("-inf"))
        return chosen.scatter(-1, picked, 0.0)


def load_transformers(spec: RoleSpec) -> TransformersGenerator:
    options = parse_params(spec.params)
    path = check_checkpoint(spec.location)
    try:
        import transformers  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "the transformers backend needs torch and transformers: pip install 'dialab[cpu]' "
            "(or 'dialab[gpu]' on a CUDA host)"
        ) from error
    try:
        resolve_device(options.device)
    except ValueError as error:
        raise ValueError(f"transformers backend: {error}") from None
    return TransformersGenerator(spec.location, options, _load_model(path, options))


def generator_for_model(
    model: Any, tokenizer: Any, params: Mapping[str, Any]
) -> TransformersGenerator:
    """A generator over a model that is already in memory (online training's policy, whose
    weights change between calls): the same batching and seeded sampling as a loaded
    checkpoint. The caller puts the model in eval mode around the calls; the tokenizer is used
    as it is, except that it pads on the left."""
    options = parse_params(params)
    tokenizer.padding_side = "left"
    device = next(model.parameters()).device
    return TransformersGenerator("(in memory)", options, _LoadedModel(model, tokenizer, device))


def _eos_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    configured = model.generation_config.eos_token_id
    ids = set(configured if isinstance(configured, list) else [configured])
    ids.add(tokenizer.eos_token_id)
    ids.discard(None)
    if not ids:
        raise ValueError("transformers backend: the checkpoint names no end-of-sequence token")
    return frozenset(int(token) for token in ids)
