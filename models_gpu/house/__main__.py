"""``python -m models_gpu.house --out DIR [--steps N] [--seed S]``: build the house model."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from models_gpu.house.build import HOUSE_TRAINING, build_house_model
from models_gpu.house.model import METADATA_FILE


class ProgressPrinter:
    """Prints a line about every tenth of the run: step, mean loss since the last line, time.
    ``write`` takes each line (default: print it and flush, so a log file shows it at once)."""

    def __init__(self, write: Callable[[str], None] | None = None) -> None:
        self.started = time.perf_counter()
        self.losses: list[float] = []
        self.write = write or (lambda line: print(line, flush=True))

    def __call__(self, step: int, total: int, loss: float) -> None:
        self.losses.append(loss)
        if step % max(1, total // 10) and step != total:
            return
        elapsed = time.perf_counter() - self.started
        left = elapsed / step * (total - step)
        mean = sum(self.losses) / len(self.losses)
        self.write(
            f"  step {step:>5}/{total}  loss {mean:.3f}  {elapsed:4.0f} s  ({left:.0f} s left)"
        )
        self.losses.clear()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models_gpu.house",
        description="Build and pre-train Dialab's house model (a few minutes on a laptop CPU).",
    )
    parser.add_argument("--out", required=True, type=Path, help="directory to save it in")
    parser.add_argument("--steps", type=int, default=HOUSE_TRAINING.steps)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--eval-tasks", type=int, default=100, help="held-out tasks per kind measured at the end"
    )
    args = parser.parse_args(argv)
    if args.steps < 1 or args.eval_tasks < 1:
        parser.error("--steps and --eval-tasks must be at least 1")

    print(f"Pre-training the house model for {args.steps} steps (seed {args.seed})...")
    out = build_house_model(
        args.out,
        steps=args.steps,
        seed=args.seed,
        progress=ProgressPrinter(),
        evaluate_tasks=args.eval_tasks,
    )
    notes = json.loads((out / METADATA_FILE).read_text())
    print(f"Saved the house model in {out} ({notes['build_seconds']:.0f} s).")
    print(
        f"One-turn accuracy on {notes['one_turn_accuracy_tasks']} held-out 1-2 digit sums and "
        f"differences (greedy): {notes['one_turn_accuracy']:.0%}"
    )
    print("By kind:", json.dumps(notes["one_turn_accuracy_by_kind"]))
    by_turn = ", ".join(f"{a:.0%}" for a in notes["didactic_2_digit_accuracy_by_turn"])
    print(f"Solved by turn 1..k with the scripted teacher (2-digit, temperature 0.7): {by_turn}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
