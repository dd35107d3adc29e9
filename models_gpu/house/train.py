"""Pre-train the house model on the procedural corpus: a small, plain torch loop (nanoGPT-style).

Each step draws a fresh batch of examples from the seeded corpus stream, pads it on the right to
its longest example, and takes one AdamW step on the cross-entropy of the trained assistant turns
(everything else is labelled -100). The learning rate warms up linearly, then decays on a cosine
to ``min_lr_ratio`` of its peak. Seeded: on one machine with one thread count, the same seed gives
the same weights.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import torch

from models_gpu.devices import resolve_device, training_autocast, training_threads
from models_gpu.house.corpus import CorpusMix, Example, examples
from models_gpu.house.tokenizer import END

IGNORE_INDEX = -100  # the label transformers' causal-LM loss skips
FIRST_MIX = CorpusMix(
    tasks=((1, "+-", 0.1), (2, "+-", 0.9)),
    student_system=0.0,
    other_system=0.0,
    answer_format=0.0,
    feedback=0.0,
)
BUCKET_BATCHES = 16

Progress = Callable[[int, int, float], None]
"""``progress(step, total_steps, loss)``, called after every optimizer step."""


@dataclass(frozen=True)
class TrainConfig:
    """How the house model is pre-trained.

    steps / batch_size: optimizer steps, and examples (dialogues) per step.
    learning_rate / min_lr_ratio / warmup_steps: peak rate, reached after a linear warm-up, then
        a cosine decay to ``learning_rate * min_lr_ratio`` at the last step.
    weight_decay / grad_clip / betas: AdamW's decoupled weight decay (matrices only, not norms or
        biases), the gradient-norm clip, and Adam's moment decay rates.
    first_mix / first_share / mix: what the examples are made of (``corpus.CorpusMix``): the
        first ``first_share`` of the steps draw from ``first_mix`` (bare one-turn sums and
        differences: no system prompt, no feedback), the rest from ``mix``. Measured here: with
        the engine's system prompt in 40% of one-turn examples, per-digit accuracy after 3000
        steps was 0.56 instead of 0.94, and each step cost half as much again. The later steps
        teach system prompts and feedback dialogues; ``replay`` of their examples still come
        from ``first_mix``, so the arithmetic learnt first is not forgotten. (With the system
        prompt in only a fifth of the later examples, one build was right on 58% of held-out
        2-digit sums without it and on 6% with it.)
    seed: seeds the corpus stream and torch (weight initialisation happens before, from
        ``HouseConfig.seed``).
    device: where to train ("auto", "cpu", "cuda", "cuda:N"; see ``models_gpu.devices``).
    cpu_threads: torch's CPU threads while training (None: ``devices.training_threads()``).
    """

    steps: int = 4000
    batch_size: int = 32
    learning_rate: float = 1e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 50
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    betas: tuple[float, float] = (0.9, 0.95)
    first_mix: CorpusMix = field(default_factory=lambda: FIRST_MIX)
    first_share: float = 0.6
    mix: CorpusMix = field(default_factory=CorpusMix)
    replay: float = 0.3
    seed: int = 0
    device: str = "cpu"
    cpu_threads: int | None = None


def encode_example(tokenizer: Any, example: Example) -> tuple[list[int], list[int]]:
    """Token ids of ``example`` rendered with the chat template, and labels that keep only the
    trained assistant turns (their content and the ``END`` that closes them)."""
    end_id = tokenizer.convert_tokens_to_ids(END)
    ids: list[int] = [tokenizer.bos_token_id]
    labels: list[int] = [IGNORE_INDEX]
    for turn in example:
        header = tokenizer.encode(f"<|{turn.role}|>\n", add_special_tokens=False)
        content = [*tokenizer.encode(turn.content, add_special_tokens=False), end_id]
        newline = tokenizer.encode("\n", add_special_tokens=False)
        ids += header + content + newline
        labels += [IGNORE_INDEX] * len(header)
        labels += content if turn.trained else [IGNORE_INDEX] * len(content)
        labels += [IGNORE_INDEX] * len(newline)
    return ids, labels


def collate(rows: list[tuple[list[int], list[int]]], pad_id: int) -> dict[str, torch.Tensor]:
    """Pad on the right to the longest row: ``input_ids``, ``attention_mask``, ``labels``."""
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
    attention_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for row, (ids, row_labels) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        labels[row, : len(ids)] = torch.tensor(row_labels)
        attention_mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def batches(tokenizer: Any, config: TrainConfig) -> Iterator[dict[str, torch.Tensor]]:
    """Endless batches: ``first_share`` of the steps from ``first_mix``, then from ``mix``.

    Examples are drawn ``BUCKET_BATCHES`` batches at a time and grouped by length, so a batch
    pads little (examples run from 20 to 150 tokens); the batches of a group are then shuffled so
    that short and long ones alternate.
    """
    first_steps = round(config.first_share * config.steps)
    first = examples(f"{config.seed}:first", config.first_mix)
    then = examples(f"{config.seed}:then", config.mix)
    order = random.Random(f"house-batches:{config.seed}")
    step = 0
    while True:
        size = config.batch_size * BUCKET_BATCHES
        if step < first_steps:
            chosen: list[Example] = list(islice(first, size))
        else:
            chosen = [next(first if order.random() < config.replay else then) for _ in range(size)]
        pool = [encode_example(tokenizer, example) for example in chosen]
        pool.sort(key=lambda row: len(row[0]))
        group = [pool[i : i + config.batch_size] for i in range(0, len(pool), config.batch_size)]
        order.shuffle(group)
        for rows in group:
            step += 1
            yield collate(rows, tokenizer.pad_token_id)


def learning_rate(step: int, config: TrainConfig) -> float:
    """Linear warm-up to the peak, then cosine decay to ``min_lr_ratio`` of it."""
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    span = max(1, config.steps - config.warmup_steps)
    progress = min(1.0, (step - config.warmup_steps) / span)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    return config.learning_rate * (config.min_lr_ratio + (1 - config.min_lr_ratio) * cosine)


def make_optimizer(model: torch.nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    # Weight decay on matrices only: decaying norm gains and biases only hurts (nanoGPT, GPT-3).
    parameters = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in parameters if p.dim() >= 2], "weight_decay": config.weight_decay},
        {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.learning_rate, betas=config.betas)


def train(
    model: Any, tokenizer: Any, config: TrainConfig, progress: Progress | None = None
) -> list[float]:
    """Pre-train ``model`` in place (it ends on CPU, in float32, in eval mode); returns the loss
    of every step. Weights stay float32; the forward pass runs under bfloat16 autocast where the
    hardware has bfloat16 (``devices.training_autocast``)."""
    device = resolve_device(config.device)
    autocast_dtype = training_autocast(device)
    threads = torch.get_num_threads()
    torch.set_num_threads(config.cpu_threads or training_threads())
    try:
        torch.manual_seed(config.seed)
        model.to(device)
        optimizer = make_optimizer(model, config)
        model.train()
        losses: list[float] = []
        for step, batch in enumerate(islice(batches(tokenizer, config), config.steps)):
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(step, config)
            with torch.autocast(
                device.type, dtype=autocast_dtype or torch.float32, enabled=bool(autocast_dtype)
            ):
                loss = model(**{name: tensor.to(device) for name, tensor in batch.items()}).loss
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            losses.append(float(loss.item()))
            if progress is not None:
                progress(step + 1, config.steps, losses[-1])
    finally:
        torch.set_num_threads(threads)
    model.to("cpu").eval()
    return losses
