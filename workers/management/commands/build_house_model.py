from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from webapp.models_registry.house import (
    HOUSE_MODEL_NAME,
    house_build_progress_path,
    house_model_dir,
)
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.services import model_spec_register

HOUSE_GENERATION_PARAMS = {"temperature": 0.7, "max_new_tokens": 32}


def house_description(notes: dict[str, Any]) -> str:
    """What the registry says of the house model: how it was made and, when the build measured
    it, how it scored, with how each figure was measured (greedy answers score higher than the
    sampling its runs use)."""
    config = notes.get("config", {})
    return (
        f"Dialab's house model: a small Llama ({config.get('num_layers')} layers, hidden "
        f"{config.get('hidden_size')}, {notes.get('parameters', 0) / 1e6:.1f}M weights) with a "
        "tokenizer trained here, pre-trained on this machine on procedural arithmetic dialogues, "
        "some with the scripted teacher's 'too high' / 'too low' feedback (models_gpu/house). It "
        f"answers in the form 'The answer is N'.{_measured_when_built(notes)} Built by "
        "`manage.py build_house_model`."
    )


def _measured_when_built(notes: dict[str, Any]) -> str:
    accuracy = notes.get("one_turn_accuracy")
    if accuracy is None:  # built with --eval-tasks 0
        return ""
    measured = (
        f" When built: right in one turn on {accuracy:.0%} of "
        f"{notes.get('one_turn_accuracy_tasks')} held-out 1-2 digit sums and differences, "
        "answering greedily."
    )
    by_turn = notes.get("didactic_2_digit_accuracy_by_turn") or []
    if by_turn:
        turns = "/".join(str(k) for k in range(1, len(by_turn) + 1))
        solved = " / ".join(f"{share:.0%}" for share in by_turn)
        temperature = notes.get("didactic_temperature")
        sampling = f"Sampling at temperature {temperature}" if temperature else "Sampling"
        measured += (
            f" {sampling}, with the scripted teacher: 2-digit ones solved by turn {turns}: "
            f"{solved}."
        )
    return measured


class Command(BaseCommand):
    help = (
        "Build and pre-train the house model into <DIALAB_DATA_DIR>/models/house (a few minutes "
        "on a CPU) unless it is already there, and register it as the model 'house' "
        "(transformers backend). Running it again changes nothing; --force rebuilds."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--force", action="store_true", help="Rebuild even if it exists.")
        parser.add_argument("--steps", type=int, default=None, help="Training steps.")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--eval-tasks",
            type=int,
            default=100,
            help="Held-out tasks per kind measured after training (0: skip).",
        )

    def handle(
        self, *args: Any, force: bool, steps: int | None, seed: int, eval_tasks: int, **_: Any
    ) -> None:
        from models_gpu.house.model import METADATA_FILE

        out = house_model_dir()
        built = (out / METADATA_FILE).is_file() and (out / "config.json").is_file()
        if built and not force:
            self.stdout.write(f"The house model is already built in {out} (--force rebuilds).")
        else:
            self._build(out, steps=steps, seed=seed, eval_tasks=eval_tasks)
        notes = json.loads((out / METADATA_FILE).read_text())
        model, created = model_spec_register(
            name=HOUSE_MODEL_NAME,
            backend=ModelSpec.Backend.TRANSFORMERS,
            location=str(out),
            generation_params=HOUSE_GENERATION_PARAMS,
            description=house_description(notes),
            replace=True,
        )
        accuracy = notes.get("one_turn_accuracy")
        measured = f" one-turn accuracy {accuracy:.0%}," if accuracy is not None else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"{'Registered' if created else 'Updated'} model '{model.name}' "
                f"(transformers,{measured} {out})."
            )
        )

    def _build(self, out: Path, *, steps: int | None, seed: int, eval_tasks: int) -> None:
        try:
            from tqdm import tqdm

            from models_gpu.house import build_house_model
        except ImportError as error:
            raise CommandError(
                f"building the house model needs torch and transformers ({error}); "
                "install them with scripts/setup.sh or pip install 'dialab[cpu]'"
            ) from None
        from models_gpu.house.__main__ import ProgressPrinter
        from models_gpu.house.build import HOUSE_TRAINING
        from models_gpu.house.progress import BuildProgressFile

        total = steps if steps is not None else HOUSE_TRAINING.steps
        if total < 1:
            raise CommandError(f"--steps must be at least 1, got {total}")
        # Built beside the target and moved in at the end: an interrupted build never leaves a
        # directory that looks finished.
        building = out.with_name(f".{out.name}.building")
        shutil.rmtree(building, ignore_errors=True)
        self.stdout.write(f"Building the house model in {out} ({total} steps)...")
        # The home page polls this file while the build runs (webapp.views.house_build).
        report = BuildProgressFile(house_build_progress_path())
        report.start(total)
        try:
            with tqdm(total=total, unit="step", desc="pre-training", disable=None) as bar:
                # Without a terminal (the demo writes data/house-model.log) tqdm draws nothing:
                # a line every tenth of the steps says how far it got instead.
                log_line = None if not bar.disable else ProgressPrinter(self._write_now)

                def progress(step: int, steps_total: int, loss: float) -> None:
                    bar.update(step - bar.n)
                    bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
                    report(step, steps_total, loss)
                    if log_line is not None:
                        log_line(step, steps_total, loss)

                build_house_model(
                    building, steps=total, seed=seed, progress=progress, evaluate_tasks=eval_tasks
                )
            if out.exists():
                shutil.rmtree(out)
            building.rename(out)
        except BaseException as error:  # Ctrl-C too: the page must not say it is still training
            report.failed(str(error) or type(error).__name__)
            raise
        report.done()

    def _write_now(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()  # a log file shows each line as it comes, not at the end
