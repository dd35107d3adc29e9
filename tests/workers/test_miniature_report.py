"""The miniature's report: seeds pooled, gains, results JSON read back, and the SVG figure."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

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


def test_feedback_use_outside_ranges_and_rewards_are_reported_and_read_back(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from models_gpu.spec.reports import MoveCounts

    def with_moves(r: ConditionResult, consistent: int) -> ConditionResult:
        return replace(
            r,
            feedback_use=(MoveCounts(10, 9), MoveCounts(8, 8, 8, consistent, 4.0, 8)),
            outside_solved_by_turn=(1, 3, 5),
            outside_dialogues=10,
            outside_feedback_use=(MoveCounts(10, 5),),
            reward_history=((10, 0.25), (20, 0.5)),
        )

    per_seed = {
        seed: [with_moves(r, 4 if r.condition == "base" else 7) for r in results]
        for seed, results in PER_SEED.items()
    }
    path = tmp_path / "results.json"
    miniature_report.write_results(path, per_seed, {"steps": 20})
    assert miniature_report.read_results([path]) == per_seed
    online = miniature_report.pooled_feedback_use(per_seed, "online")
    assert online[1] == MoveCounts(16, 16, 16, 14, 8.0, 16)
    later = miniature_report.later_moves(online)
    assert (later.consistent, later.later, later.chance) == (14, 16, 0.5)
    lines = miniature_report.feedback_use_lines(per_seed, ["base", "online"])
    assert lines[1].startswith("base") and "94.4%" in lines[1] and "50.0 [" in lines[1]
    assert "87.5 [" in lines[2] and lines[2].endswith("/50")
    outside = miniature_report.outside_lines(per_seed, ["base", "online"])
    assert outside[1].startswith("base") and "50.0 [" in outside[1]
    assert miniature_report.reward_lines(per_seed)[0] == "seed 0 base: 10: 0.25, 20: 0.50"
    # Results written before feedback use was recorded report without it.
    assert miniature_report.feedback_use_lines(PER_SEED, ["base", "online"]) == []
    assert miniature_report.outside_lines(PER_SEED, ["base", "online"]) == []


def test_the_command_reports_earlier_results_and_ends_with_the_headline_figures(
    tmp_path: Path, settings: Any
) -> None:
    """It also keeps them as the latest result, which the demo's home page shows."""
    from dataclasses import replace
    from io import StringIO

    from django.core.management import call_command

    from models_gpu.spec.reports import MoveCounts

    moves = (MoveCounts(10, 9), MoveCounts(8, 8, 8, 6, 4.0, 8), MoveCounts(6, 6, 6, 3, 2.0, 6))
    recorded = {"feedback_use": moves, "outside_dialogues": 10, "outside_solved_by_turn": (1, 2, 3)}
    per_seed = {
        seed: [replace(r, **recorded) for r in results] for seed, results in PER_SEED.items()
    }
    path = tmp_path / "results.json"
    miniature_report.write_results(path, per_seed, {"steps": 20})
    settings.DATA_DIR = tmp_path / "data"
    out = StringIO()
    call_command("sml_miniature", "--report-from", str(path), stdout=out)
    lines = out.getvalue().splitlines()
    assert any("outside every training range" in line for line in lines)
    assert any("consistent with all feedback so far" in line for line in lines)
    assert lines[-4:] == [
        "gain_turn_1: 10.0",
        "gain_turn_3: 50.0",
        "consistent_base: 64.3",
        "consistent_online: 64.3",
    ]
    latest = json.loads((tmp_path / "data" / "miniature" / "latest.json").read_text())
    assert latest["seeds"] == [0, 1] and latest["headline"]["gain_turn_3"] == 50.0
    assert latest["report"][0].startswith("Accuracy after turn k on held-out tasks")
    assert (tmp_path / "data" / "miniature" / "latest.svg").read_text().startswith("<svg")


def test_a_house_that_is_not_a_checkpoint_is_refused(tmp_path: Path) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="no checkpoint there"):
        call_command("sml_miniature", "--house", str(tmp_path), "--work-dir", str(tmp_path))


def test_an_unknown_rollout_backend_is_refused(tmp_path: Path) -> None:
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="invalid choice: 'tgi'"):
        call_command("sml_miniature", "--rollout-backend", "tgi", "--work-dir", str(tmp_path))
