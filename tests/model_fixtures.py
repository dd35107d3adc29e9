"""A tiny, untrained house-model checkpoint for backend and engine tests (built in seconds).

Real model code runs on it (tokenizer, chat template, Llama forward pass, vLLM); what it says is
noise, so tests assert on shapes, counts, determinism and plumbing, not on answers.
"""

from __future__ import annotations

from pathlib import Path

TINY_CORPUS_TASKS = 500


def build_tiny_model(out_dir: Path) -> Path:
    from models_gpu.generators.arithmetic import arithmetic_tasks
    from models_gpu.house.model import HouseConfig, build_untrained

    tasks = arithmetic_tasks(TINY_CORPUS_TASKS, seed=7)
    corpus = [f"{task['prompt']} The answer is {task['answer']}." for task in tasks]
    corpus.append("That is not right. Your answer is too high. Try again, check each step.")
    return build_untrained(out_dir, corpus, HouseConfig(vocab_size=512))
