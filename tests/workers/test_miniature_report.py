"""The miniature's report: seeds pooled, gains, results JSON read back, and the SVG figure."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from models_gpu.training.miniature import ConditionResult
from workers import miniature_report


def result(
    condition: str, per_task: tuple[tuple[int, ...], ...], seconds: float
) -> ConditionResult:
    """Five held-out tasks of two samples each."""
    pooled = tuple(sum(task[k] for task in per_task) for k in range(3))
    return ConditionResult(condition, pooled, 10, seconds, per_task, 2)


PER_SEED = {
    0: [
        result("base", ((1, 1, 2), (0, 1, 1), (0, 0, 1), (0, 0, 0), (0, 0, 0)), 0.0),
        result("online", ((1, 2, 2), (1, 1, 2), (0, 1, 2), (0, 1, 2), (0, 0, 1)), 3.0),
    ],
    1: [
        result("base", ((0, 1, 1), (0, 0, 1), (0, 0, 0), (0, 0, 0), (0, 0, 0)), 0.0),
        result("online", ((1, 1, 2), (0, 1, 2), (0, 1, 1), (0, 0, 1), (0, 0, 1)), 4.0),
    ],
}


def test_seeds_pool_and_gains_are_paired_over_held_out_tasks() -> None:
    curves = miniature_report.pooled(PER_SEED, ["base", "online"], 3)
    assert [(p.successes, p.total) for p in curves["online"]] == [(3, 20), (8, 20), (16, 20)]
    gains = miniature_report.gains(PER_SEED, "online", 3)
    assert [round(g.points, 1) for g in gains] == [10.0, 25.0, 50.0]
    assert all(g.method == "paired" and g.tasks == 10 for g in gains), "(seed, task) pairs"
    assert gains[-1].low > 0, "every task gains or stays: the interval excludes 0"
    lines = miniature_report.table_lines(PER_SEED, curves)
    assert lines[1].startswith("base") and "80.0 [" in lines[2]
    assert "paired over shared tasks" in lines[-2]
    assert lines[-1].startswith("online") and "+50.0 [" in lines[-1]


def test_results_without_per_task_counts_are_compared_unpaired() -> None:
    """Results files written before per-task counts were kept still report, unpaired."""
    old = {
        0: [
            ConditionResult("base", (1, 2, 4), 10, 0.0),
            ConditionResult("online", (2, 5, 9), 10, 3.0),
        ]
    }
    gains = miniature_report.gains(old, "online", 3)
    assert [g.method for g in gains] == ["unpaired"] * 3 and gains[0].p_value is None


def test_results_round_trip_and_the_figure_is_an_svg_with_a_line_per_condition(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "seed0.json", tmp_path / "seed1.json"
    miniature_report.write_results(first, {0: PER_SEED[0]}, {"steps": 120})
    miniature_report.write_results(second, {1: PER_SEED[1]}, {"steps": 120})
    assert miniature_report.read_results([first, second]) == PER_SEED, "seeds of two files"
    with pytest.raises(ValueError, match="seed 0 is in"):
        miniature_report.read_results([first, first])
    curves = miniature_report.pooled(PER_SEED, ["base", "online"], 3)
    svg = ElementTree.fromstring(miniature_report.figure_svg(curves, "a <title> & more"))
    namespace = "{http://www.w3.org/2000/svg}"
    assert len(svg.findall(f"{namespace}polyline")) == 2
    assert len(svg.findall(f"{namespace}circle")) == 6, "a point per condition and turn"
    texts = [element.text for element in svg.iter(f"{namespace}text")]
    assert "a <title> & more" in texts and "online SML" in texts and "90%" in texts
