"""Does online SML assign credit across turns? (``models_gpu/training/credit_check.py``)

    .venv/bin/python benchmarks/credit_assignment.py --model data/models/house
    .venv/bin/python benchmarks/credit_assignment.py --model DIR --steps 120 --tasks-per-step 8
    .venv/bin/python benchmarks/credit_assignment.py --model DIR --rollout-backend vllm
    .venv/bin/python benchmarks/credit_assignment.py --quick

Guess the number with a teacher that states the answer after the first wrong guess: online SML
over two-turn dialogues should lift accuracy after turn 2 toward 100% and leave turn 1 at chance
(1/8). The base model must already play the game (make valid guesses); the house model's corpus
teaches it that. ``--quick`` runs the test suite's version instead: it builds its own base (about
a minute) and plays the one range 1..8 (``credit_check.QUICK``). Prints base and trained accuracy
after turns 1 and 2 (95% Wilson intervals, held-out ranges or the quick range), the reward every
10 steps, then the headline figures, one ``name: value`` a line. Nothing is downloaded; CPU only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models_gpu.spec.miniature import MINIATURE_ONLINE
from models_gpu.spec.online import ROLLOUT_BACKENDS
from models_gpu.training.credit_check import (
    QUICK,
    TURNS,
    CreditCheckSettings,
    build_quick_base,
    quick_tasks,
    run_credit_check,
)
from webapp.metrics.stats import wilson_interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    base = parser.add_mutually_exclusive_group(required=True)
    base.add_argument("--model", help="The base checkpoint (the house model).")
    base.add_argument(
        "--quick", action="store_true", help="Build the quick check's base and play its range."
    )
    parser.add_argument(
        "--steps", type=int, default=None,
        help=f"Default: {CreditCheckSettings().steps}, with --quick {QUICK.steps}.",
    )  # fmt: skip
    parser.add_argument("--lr", type=float, default=CreditCheckSettings().learning_rate)
    parser.add_argument("--tasks-per-step", type=int, default=MINIATURE_ONLINE.tasks_per_step)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work-dir", default=None, help="Where the checkpoint goes (a temp dir).")
    parser.add_argument(
        "--rollout-backend", choices=ROLLOUT_BACKENDS, default="transformers",
        help="What plays the training rollouts (OnlineConfig.rollout_backend).",
    )  # fmt: skip
    args = parser.parse_args()

    online = replace(
        CreditCheckSettings().online,
        tasks_per_step=args.tasks_per_step,
        rollout_backend=args.rollout_backend,
    )
    work = Path(args.work_dir or tempfile.mkdtemp(prefix="credit-check-"))
    if args.quick:
        started = time.perf_counter()
        model = build_quick_base(work / "quick-base", seed=args.seed)
        print(f"quick base built in {time.perf_counter() - started:.0f} s")
        defaults, tasks = QUICK, quick_tasks()
    else:
        model, defaults, tasks = Path(args.model), CreditCheckSettings(), None
    steps = defaults.steps if args.steps is None else args.steps
    settings = replace(defaults, steps=steps, learning_rate=args.lr, online=online)
    result = run_credit_check(model, work, settings, seed=args.seed, tasks=tasks, report=print)
    summary = json.loads(
        (work / f"credit-check-seed{args.seed}" / "final" / "dialab_training.json").read_text()
    )
    rewards = summary["result"]["reward_history"]
    print("mean reward by step: " + ", ".join(f"{step}: {r:.2f}" for step, r in rewards))
    for which in ("base", "trained"):
        solved = result.base if which == "base" else result.trained
        cells = []
        for turn in range(1, TURNS + 1):
            p = wilson_interval(solved[turn - 1], result.dialogues)
            cells.append(
                f"after turn {turn}: {p.percent:.1f}% [{p.low_percent:.1f}, {p.high_percent:.1f}]"
            )
        print(f"{which:<8}" + "; ".join(cells) + f" (of {result.dialogues})")
    print(f"steps: {settings.steps}")
    print(f"train_seconds: {result.train_seconds:.0f}")
    for which in ("base", "trained"):
        for turn in range(1, TURNS + 1):
            print(f"{which}_turn_{turn}: {100 * result.accuracy(which, turn):.1f}")


if __name__ == "__main__":
    main()
