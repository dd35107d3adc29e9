"""Online SML's rollouts on vLLM: one engine in the training process, given the policy's weights
before every step's rollouts.

TRL's colocate mode is the design followed: the engine lives in the trainer's own process
(vLLM's ``external_launcher`` executor, one rank), the trainer calls ``sync_weights`` before it
asks for a step's rollouts (``GRPOTrainer._generate``), and the log-probabilities vLLM reports
for the sampled tokens let TRL correct for the gap between vLLM's numerics and the policy's own
(importance sampling, ``online._grpo_arguments``). TRL's own engine cannot be used: it pushes
weights through each layer's ``load_weights``, which fails on vLLM's CPU build (0.31 and 0.32:
"'Parameter' object has no attribute 'weight_loader'", the CPU backend having repacked the
weights after loading). So Dialab builds the engine itself, through the vllm backend (per-request
seeds, the prefix cache, the CPU settings), and pushes weights with vLLM's in-place
``reload_weights``, which both builds accept. A tied output layer is pushed under its own name
too: in-place reloading replaces the embedding's tensor, and the output layer would keep the old
one.

``check_sync`` is what the tests assert: after a sync, vLLM's log-probabilities of the tokens it
sampled agree with the policy's own forward pass on the same ids.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from models_gpu.backends.vllm_backend import VllmGenerator, colocated_generator
from models_gpu.types import GenerationRequest


class ColocatedVllm:
    """A vLLM engine in this process that plays with the policy's current weights."""

    def __init__(self, model: Any, location: str, params: Mapping[str, Any]) -> None:
        self.model = model  # the policy: the trainer sets its own, wrapped, once it has one
        self.generator: VllmGenerator = colocated_generator(location, params)
        self.syncs = 0

    def sync_weights(self) -> None:
        """Push the policy's weights into the engine (what TRL calls before a step's rollouts)
        and forget the prefixes computed with the old ones."""
        self.generator.reload_weights(_named_weights(self.model))
        self.generator.forget_prefixes()
        self.syncs += 1

    def close(self) -> None:
        self.generator.close()


def _named_weights(model: Any) -> Iterator[tuple[str, Any]]:
    """The policy's weights under the checkpoint's names; a LoRA policy's adapters merged into
    its base weights for the copy (and unmerged after)."""
    peft = hasattr(model, "merge_adapter") and hasattr(model, "peft_config")
    if peft:
        model.merge_adapter()
    try:
        base = model.get_base_model() if peft else model
        named = dict(base.named_parameters())
        for name, parameter in named.items():
            if peft and ("lora_" in name or "modules_to_save" in name or "original_module" in name):
                continue
            yield name.replace(".base_layer", ""), parameter.data
        output = base.get_output_embeddings()
        tied = getattr(base.config, "tie_word_embeddings", False)
        if tied and output is not None and "lm_head.weight" not in named:
            yield "lm_head.weight", output.weight.data
    finally:
        if peft:
            model.unmerge_adapter()


def sampled_logprobs(model: Any, prompt_ids: Sequence[int], sampled: Sequence[int]) -> list[float]:
    """The policy's own log-probability of each sampled token after ``prompt_ids``."""
    import torch

    device = next(model.parameters()).device
    ids = torch.tensor([[*prompt_ids, *sampled]], device=device)
    with torch.inference_mode():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
    chosen = torch.tensor(list(sampled), device=device)[:, None]
    return torch.log_softmax(logits, dim=-1).gather(1, chosen)[:, 0].tolist()


def check_sync(
    engine: ColocatedVllm, model: Any, tokenizer: Any, requests: Sequence[GenerationRequest]
) -> float:
    """The largest gap, over every token vLLM samples for ``requests``, between the
    log-probability vLLM reports and the policy's own on the same ids (sampling at temperature 1,
    so that both mean the same distribution)."""
    from models_gpu.backends.prompting import chat_messages

    generations = engine.generator.generate(requests)
    gap = 0.0
    for request, generation in zip(requests, generations, strict=True):
        prompt = tokenizer.apply_chat_template(
            chat_messages(request), add_generation_prompt=True, tokenize=True
        )
        prompt_ids = list(prompt["input_ids"] if isinstance(prompt, Mapping) else prompt)
        assert len(prompt_ids) == generation.prompt_tokens, "vLLM rendered another prompt"
        own = sampled_logprobs(model, prompt_ids, generation.token_ids)
        for reported, expected in zip(generation.token_logprobs, own, strict=True):
            gap = max(gap, abs(reported - expected))
    return gap
