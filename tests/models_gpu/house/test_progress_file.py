"""``BuildProgressFile``: the house-model build's progress as another process reads it (plain
pytest, no torch). Time is handed in, so the pace and the time left are exact."""

from __future__ import annotations

import json
from pathlib import Path

from models_gpu.house.progress import BuildProgressFile


class Clock:
    """Monotonic and wall time that the test moves on by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def read(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())


def test_reports_steps_loss_and_time_left_at_most_once_a_second(tmp_path: Path) -> None:
    path, clock = tmp_path / "models" / "house-build.json", Clock()
    report = BuildProgressFile(path, every_seconds=1.0, clock=clock, wall=clock)
    report.start(total=100)
    assert read(path)["state"] == "preparing" and read(path)["step"] == 0
    clock.now += 5  # the tokenizer and the weights: not part of the training's pace
    report(1, 100, 4.0)
    first = read(path)
    assert (first["state"], first["step"], first["loss"]) == ("training", 1, 4.0)
    assert first["eta_seconds"] is None  # one step times nothing yet
    for step in range(2, 11):  # 1/16 s a step: the file is not rewritten within a second
        clock.now += 0.0625
        report(step, 100, 3.0)
    assert read(path)["step"] == 1
    for step in range(11, 18):
        clock.now += 0.0625
        report(step, 100, 2.0)
    now = read(path)
    assert now["step"] == 17 and now["state"] == "training"
    # 16 steps in 1 s since the first: the 83 steps left take 5.1875 s.
    assert now["eta_seconds"] == 5.2
    assert now["loss"] == (9 * 3.0 + 7 * 2.0) / 16  # the steps since the last report
    assert now["elapsed_seconds"] == 6.0 and now["updated_at"] == clock.now
    assert list(path.parent.iterdir()) == [path]  # written beside, then renamed over


def test_the_last_step_then_done_or_failed(tmp_path: Path) -> None:
    path, clock = tmp_path / "house-build.json", Clock()
    report = BuildProgressFile(path, clock=clock, wall=clock)
    report.start(total=3)
    for step in (1, 2, 3):
        clock.now += 0.01
        report(step, 3, 1.5)
    assert read(path)["state"] == "finishing" and read(path)["step"] == 3
    report.done()
    assert read(path)["state"] == "done" and read(path)["eta_seconds"] == 0
    report.failed("disk full")
    assert read(path)["state"] == "failed" and read(path)["error"] == "disk full"
