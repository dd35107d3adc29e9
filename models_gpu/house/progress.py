"""Where a house-model build stands, kept in a small JSON file that other processes read (the
web's home page polls it while ``manage.py build_house_model`` runs in the background).

``BuildProgressFile`` is a ``train.Progress`` callback. The file is replaced whole on each write
(written beside it, then renamed), so a reader never sees half of one, and written at most once
per ``every_seconds`` while training (a step takes about 45 ms on a laptop CPU).

The file holds one JSON object:

    state            "preparing" (tokenizer and weights), "training", "finishing" (the
                     held-out evaluation and saving, after the last step), "done" or "failed"
    step, total      optimizer steps taken, and planned
    loss             the mean training loss of the steps since the last write (null before one)
    elapsed_seconds  since the build started
    eta_seconds      training time left at the pace so far (null until a step is timed)
    started_at, updated_at   Unix times
    error            why it failed (state "failed" only)

Standard library only: the web side reads it without importing anything of the build.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREPARING, TRAINING, FINISHING = "preparing", "training", "finishing"
DONE, FAILED = "done", "failed"


class BuildProgressFile:
    """Reports a build's progress to ``path``: ``start(total)``, then as the training's
    ``progress(step, total, loss)`` callback, then ``done()`` or ``failed(error)``.

    ``clock`` (monotonic seconds) and ``wall`` (Unix time) are there for tests of the pace."""

    def __init__(
        self,
        path: str | Path,
        *,
        every_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path)
        self.every_seconds = every_seconds
        self.clock, self.wall = clock, wall
        self.started = self.training_started = self.written = 0.0
        self.started_at = 0.0
        self.losses: list[float] = []
        self.state: dict[str, Any] = {}

    def start(self, total: int) -> None:
        self.started = self.clock()
        self.started_at = self.wall()
        self.state = {"state": PREPARING, "step": 0, "total": total, "loss": None,
                      "eta_seconds": None}  # fmt: skip
        self._write()

    def __call__(self, step: int, total: int, loss: float) -> None:
        now = self.clock()
        if step == 1:
            # The pace is measured from the first step on: the tokenizer and the weights before
            # it take their own time, which says nothing about the steps left.
            self.training_started = now
        self.losses.append(loss)
        last = step >= total
        if not last and step > 1 and now - self.written < self.every_seconds:
            return
        per_step = (now - self.training_started) / (step - 1) if step > 1 else None
        self.state = {
            "state": FINISHING if last else TRAINING,
            "step": step,
            "total": total,
            "loss": round(sum(self.losses) / len(self.losses), 4),
            "eta_seconds": round(per_step * (total - step), 1) if per_step is not None else None,
        }
        self.losses.clear()
        self._write()

    def done(self) -> None:
        self.state = {**self.state, "state": DONE, "eta_seconds": 0}
        self._write()

    def failed(self, error: str) -> None:
        self.state = {**self.state, "state": FAILED, "eta_seconds": None, "error": error}
        self._write()

    def _write(self) -> None:
        self.written = self.clock()
        report = {
            **self.state,
            "elapsed_seconds": round(self.written - self.started, 1),
            "started_at": self.started_at,
            "updated_at": self.wall(),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.partial")
        partial.write_text(json.dumps(report))
        os.replace(partial, self.path)  # atomic: a reader sees the old report or the new one
