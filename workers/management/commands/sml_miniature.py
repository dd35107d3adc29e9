from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from models_gpu.spec.online import ROLLOUT_BACKENDS


class Command(BaseCommand):
    help = (
        "The miniature reproduction of online SML: trains the house model by multi-turn GRPO on "
        "guess-the-number tasks and compares it, on held-out tasks, with the base model, "
        "single-turn RL and SFT on the same generation budget, per seed "
        "(models_gpu/training/miniature.py says why this family). Each seed builds its own house "
        "model, pre-trained on guessing games played without a strategy (so a result holds "
        "across builds), unless --house names one checkpoint for every seed. Prints accuracy "
        "after each turn with 95%% intervals, pooled over the seeds, on held-out and on outside "
        "ranges, how the guesses used the feedback, the training "
        "rewards, then name: value lines: the gains at turn 1 and at the last turn, and the "
        "share of later guesses consistent with the feedback, base and online."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
        parser.add_argument("--steps", type=int, default=None, help="GRPO steps per condition.")
        parser.add_argument("--work-dir", default=None, help="Where checkpoints go (a temp dir).")
        parser.add_argument(
            "--house",
            default=None,
            help="One base checkpoint for every seed (default: each seed builds its own house "
            "model in the work dir, pre-trained on guessing games, about 3 minutes each).",
        )
        parser.add_argument(
            "--conditions",
            nargs="+",
            default=None,
            help="A subset of base, online, single_turn, sft (default: all).",
        )
        parser.add_argument(
            "--rollout-backend",
            choices=ROLLOUT_BACKENDS,
            default=None,
            help="What plays online SML's and single-turn RL's training rollouts: transformers "
            "(the policy itself, the default) or vllm (a colocated vLLM engine synced before "
            "every step; needs vLLM installed).",
        )
        parser.add_argument(
            "--results", default=None, help="Write the per-seed results to this JSON file."
        )
        parser.add_argument(
            "--report-from",
            nargs="+",
            default=None,
            help="Train nothing: report (and draw) the results earlier --results wrote (several "
            "files: their seeds pooled).",
        )
        parser.add_argument("--figure", default=None, help="Draw the curves to this SVG file.")
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help="CPU threads for training (default: every core; on a busy machine, fewer).",
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
        results: str | None,
        report_from: list[str] | None,
        figure: str | None,
        threads: int | None,
        house: str | None,
        rollout_backend: str | None,
        **_: Any,
    ) -> None:
        from dataclasses import replace

        from models_gpu.devices import TRAINING_THREADS_ENV, usable_cores
        from models_gpu.spec.miniature import MiniatureSettings
        from models_gpu.training import miniature
        from workers import miniature_report

        if demo_task_sets:
            self._demo_task_sets(miniature.split_tasks(0, MiniatureSettings().heldout_tasks))
            return
        settings = MiniatureSettings()
        if steps is not None:
            settings = replace(settings, steps=steps)
        if rollout_backend is not None:
            online = replace(settings.online, rollout_backend=rollout_backend)
            settings = replace(settings, online=online)
        if report_from:
            reported = miniature_report.read_results([Path(path) for path in report_from])
            found = [r.condition for r in next(iter(reported.values()))]
            self._report(reported, found, figure)
            return

        if threads is not None and threads < 1:
            raise CommandError("--threads must be at least 1")
        chosen = conditions or list(miniature.CONDITIONS)
        unknown = sorted(set(chosen) - set(miniature.CONDITIONS))
        if unknown:
            raise CommandError(f"unknown condition(s) {', '.join(unknown)}")
        if "base" not in chosen:
            chosen = ["base", *chosen]  # every gain is measured against it
        if house is not None and not (Path(house) / "config.json").is_file():
            raise CommandError(f"--house {house}: no checkpoint there (no config.json)")
        # This command is the machine's only work: train on every core unless told otherwise.
        os.environ[TRAINING_THREADS_ENV] = str(threads or usable_cores())
        root = Path(work_dir or tempfile.mkdtemp(prefix="sml-miniature-"))
        self.stdout.write(f"Checkpoints in {root}")
        per_seed = {}
        for seed in seeds:
            base = Path(house) if house else self._house_for_seed(root, seed)
            per_seed[seed] = miniature.run_seed(
                base, root, seed, settings, report=self.stdout.write, conditions=chosen
            )
        if results:
            miniature_report.write_results(
                Path(results),
                per_seed,
                {
                    "steps": settings.steps,
                    "house": house or "per seed",
                    "rollout_backend": settings.online.rollout_backend,
                },
            )
        self._report(per_seed, chosen, figure)

    def _house_for_seed(self, root: Path, seed: int) -> Path:
        """The miniature's base built with ``seed`` in ``root`` (kept: a rerun reuses it): the
        house model pre-trained on guessing games (``house.build.GAME_TRAINING``)."""
        from models_gpu.house import build_house_model
        from models_gpu.house.build import GAME_TRAINING

        out = root / f"house-seed{seed}"
        if not (out / "config.json").is_file():
            self.stdout.write(f"seed {seed}: building its house model in {out}")
            build_house_model(out, seed=seed, train_config=GAME_TRAINING, evaluate_tasks=64)
        return out

    def _demo_task_sets(self, split: tuple[list[Any], list[Any]]) -> None:
        from webapp.accounts.services import DEMO_USERNAME
        from webapp.training.miniature import miniature_task_sets_create

        def fields(task: Any) -> dict[str, Any]:
            return {
                "prompt": task.prompt, "reference": dict(task.reference),
                "verifier_kind": task.verifier_kind, "domain": task.domain,
            }  # fmt: skip

        training, heldout = ([fields(task) for task in tasks] for tasks in split)
        if miniature_task_sets_create(
            owner_username=DEMO_USERNAME, training=training, heldout=heldout
        ):
            self.stdout.write(
                f"Added the miniature's task sets to the demo: {len(training)} training tasks, "
                f"{len(heldout)} held out."
            )
        else:
            self.stdout.write("The miniature's task sets are there already (or no demo project).")

    def _report(
        self, per_seed: dict[int, list[Any]], conditions: list[str], figure: str | None
    ) -> None:
        """Print the tables, draw the figure, end with the headline figures (one ``name:
        value`` a line), and keep all of it as the latest result the home page shows."""
        from django.conf import settings as django_settings

        from models_gpu.spec.miniature import MINIATURE_ONLINE, latest_results_dir
        from workers import miniature_report

        for line in miniature_report.report_lines(per_seed, conditions):
            self.stdout.write(line)
        curves = miniature_report.pooled(per_seed, conditions, _turns(per_seed))
        title = f"Held-out accuracy after turn k, seeds {sorted(per_seed)} pooled (95% CI)"
        svg = miniature_report.figure_svg(curves, title, horizon=MINIATURE_ONLINE.horizon)
        if figure:
            Path(figure).write_text(svg, encoding="utf-8")
            self.stdout.write(f"Figure: {figure}")
        headline = miniature_report.headline(per_seed, conditions)
        latest = latest_results_dir(Path(django_settings.DATA_DIR))
        miniature_report.save_latest(
            latest, report=miniature_report.report_lines(per_seed, conditions),
            headline=headline, svg=svg, seeds=sorted(per_seed),
        )  # fmt: skip
        for name, value in headline.items():
            self.stdout.write(f"{name}: {value:.1f}")


def _turns(per_seed: dict[int, list[Any]]) -> int:
    return len(next(iter(per_seed.values()))[0].solved_by_turn)
