from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.runs.metrics import Proportion, difference_interval, wilson_interval
from workers.management.commands.build_house_model import house_model_dir


class Command(BaseCommand):
    help = (
        "The miniature reproduction of online SML: trains the house model by multi-turn GRPO on "
        "guess-the-number tasks and compares it, on held-out tasks, with the base model, "
        "single-turn RL and SFT on the same generation budget, per seed "
        "(models_gpu/training/miniature.py says why this family). Builds the house model first "
        "if it is not there. Prints accuracy after each turn with 95%% intervals, pooled over "
        "the seeds, then the gains at turn 1 and at the last turn as name: value lines."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
        parser.add_argument("--steps", type=int, default=None, help="GRPO steps per condition.")
        parser.add_argument("--work-dir", default=None, help="Where checkpoints go (a temp dir).")
        parser.add_argument(
            "--conditions",
            nargs="+",
            default=None,
            help="A subset of base, online, single_turn, sft (default: all).",
        )
        parser.add_argument(
            "--demo-task-sets",
            action="store_true",
            help="Only add the miniature's training and held-out tasks (seed 0) to the demo "
            "project, for its home page button (scripts/demo.sh does this); train nothing.",
        )

    def handle(
        self,
        *args: Any,
        seeds: list[int],
        steps: int | None,
        work_dir: str | None,
        conditions: list[str] | None,
        demo_task_sets: bool,
        **_: Any,
    ) -> None:
        from dataclasses import replace

        from models_gpu.spec.miniature import MiniatureSettings
        from models_gpu.training import miniature

        if demo_task_sets:
            self._demo_task_sets(miniature.split_tasks(0, MiniatureSettings().heldout_tasks))
            return

        chosen = conditions or list(miniature.CONDITIONS)
        unknown = sorted(set(chosen) - set(miniature.CONDITIONS))
        if unknown:
            raise CommandError(f"unknown condition(s) {', '.join(unknown)}")
        if "base" not in chosen:
            chosen = ["base", *chosen]  # every gain is measured against it
        house = house_model_dir()
        if not (house / "config.json").is_file():
            self.stdout.write("The house model is not built yet: building it first.")
            call_command("build_house_model")
        settings = MiniatureSettings()
        if steps is not None:
            settings = replace(settings, steps=steps)
        root = Path(work_dir or tempfile.mkdtemp(prefix="sml-miniature-"))
        self.stdout.write(f"Checkpoints in {root}")
        per_seed = {
            seed: miniature.run_seed(
                house, root, seed, settings, report=self.stdout.write, conditions=chosen
            )
            for seed in seeds
        }
        self._report(per_seed, chosen, settings.eval_turns)

    def _demo_task_sets(self, split: tuple[list[Any], list[Any]]) -> None:
        from webapp.demo.services import demo_miniature_task_sets_create

        def fields(task: Any) -> dict[str, Any]:
            return {
                "prompt": task.prompt, "reference": dict(task.reference),
                "verifier_kind": task.verifier_kind, "domain": task.domain,
            }  # fmt: skip

        training, heldout = ([fields(task) for task in tasks] for tasks in split)
        if demo_miniature_task_sets_create(training=training, heldout=heldout):
            self.stdout.write(
                f"Added the miniature's task sets to the demo: {len(training)} training tasks, "
                f"{len(heldout)} held out."
            )
        else:
            self.stdout.write("The miniature's task sets are there already (or no demo project).")

    def _report(self, per_seed: dict[int, list[Any]], conditions: list[str], turns: int) -> None:
        pooled: dict[str, list[Proportion]] = {}
        for condition in conditions:
            rows = [r for results in per_seed.values() for r in results if r.condition == condition]
            total = sum(r.dialogues for r in rows)
            pooled[condition] = [
                wilson_interval(sum(r.solved_by_turn[k] for r in rows), total) for k in range(turns)
            ]
        self.stdout.write(
            f"\nAccuracy after turn k on held-out tasks, seeds {sorted(per_seed)} pooled, "
            "95% Wilson intervals:"
        )
        header = "condition    " + "".join(f"{f'turn {k}':>22}" for k in range(1, turns + 1))
        self.stdout.write(header)
        for condition, curve in pooled.items():
            cells = "".join(
                f"{f'{p.percent:.1f} [{p.low_percent:.1f}, {p.high_percent:.1f}]':>22}"
                for p in curve
            )
            self.stdout.write(f"{condition:<13}{cells}")
        self.stdout.write("\nGain over the base model (points, Newcombe 95% interval):")
        for condition in conditions:
            if condition == "base":
                continue
            gains = [
                difference_interval(base, trained)
                for base, trained in zip(pooled["base"], pooled[condition], strict=True)
            ]
            cells = "".join(
                f"{f'{g.points:+.1f} [{g.low_points:+.1f}, {g.high_points:+.1f}]':>22}"
                for g in gains
            )
            self.stdout.write(f"{condition:<13}{cells}")
        if "online" in pooled:
            first = difference_interval(pooled["base"][0], pooled["online"][0])
            last = difference_interval(pooled["base"][-1], pooled["online"][-1])
            self.stdout.write(f"gain_turn_1: {first.points:.1f}")
            self.stdout.write(f"gain_turn_{turns}: {last.points:.1f}")
