"""The miniature reproduction's report (``manage.py sml_miniature``): per-seed results pooled
into accuracy after turn k with 95% Wilson intervals per condition, the gains over the base model
paired over held-out tasks (``webapp.metrics.comparison``, as on every comparison page), the
results as JSON (to report again without training), and the figure as a standalone SVG (no
plotting library: the README shows it as it is)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any

from models_gpu.training.miniature import ConditionResult
from webapp.metrics.comparison import Gap, TaskOutcomes, compare_outcomes
from webapp.metrics.stats import Proportion, wilson_interval

PerSeed = Mapping[int, Sequence[ConditionResult]]
LABELS = {
    "base": "base model",
    "online": "online SML",
    "single_turn": "single-turn RL",
    "sft": "SFT (offline SML)",
}
COLOURS = {"base": "#667085", "online": "#d92d20", "single_turn": "#1570ef", "sft": "#079455"}


def pooled(per_seed: PerSeed, conditions: Sequence[str], turns: int) -> dict[str, list[Proportion]]:
    """Accuracy after turn k (k = 1..turns) per condition, every seed's dialogues pooled."""
    curves = {}
    for condition in conditions:
        rows = [r for results in per_seed.values() for r in results if r.condition == condition]
        total = sum(r.dialogues for r in rows)
        curves[condition] = [
            wilson_interval(sum(r.solved_by_turn[k] for r in rows), total) for k in range(turns)
        ]
    return curves


def condition_outcomes(per_seed: PerSeed, condition: str) -> dict[str, TaskOutcomes]:
    """``condition``'s outcomes per (seed, held-out task): every condition of a seed plays the
    same held-out dialogues, so they pair. A result without per-task counts (written by an
    older Dialab) is one row of its own, which pairs with nothing: the comparison is unpaired."""
    outcomes = {}
    for seed, results in per_seed.items():
        for result in (r for r in results if r.condition == condition):
            if not result.per_task:
                key = f"{seed}:{condition}:all"
                outcomes[key] = TaskOutcomes(result.dialogues, result.solved_by_turn)
            for index, solved in enumerate(result.per_task):
                outcomes[f"{seed}:{index}"] = TaskOutcomes(result.samples_per_task, solved)
    return outcomes


def gains(per_seed: PerSeed, condition: str, turns: int) -> list[Gap]:
    """``condition``'s gain over the base model after each turn, paired over held-out tasks."""
    return compare_outcomes(
        condition_outcomes(per_seed, "base"), condition_outcomes(per_seed, condition), turns
    )


def table_lines(per_seed: PerSeed, curves: Mapping[str, Sequence[Proportion]]) -> list[str]:
    """The accuracy table, then the gains table, as fixed-width text."""
    turns = len(next(iter(curves.values())))
    header = "condition    " + "".join(f"{f'turn {k}':>22}" for k in range(1, turns + 1))
    lines = [header]
    for condition, curve in curves.items():
        cells = "".join(
            f"{f'{p.percent:.1f} [{p.low_percent:.1f}, {p.high_percent:.1f}]':>22}" for p in curve
        )
        lines.append(f"{condition:<13}{cells}")
    compared = {c: gains(per_seed, c, turns) for c in curves if c != "base"}
    method = next((g[0].method_description for g in compared.values() if g), "")
    lines += ["", f"Gain over the base model (points; {method}):"]
    for condition, condition_gains in compared.items():
        cells = "".join(f"{_gap_cell(gap):>22}" for gap in condition_gains)
        lines.append(f"{condition:<13}{cells}")
    return lines


def _gap_cell(gap: Gap) -> str:
    if not gap.informative:
        return "no information"
    if gap.low is None or gap.high is None:
        return f"{gap.points:+.1f} (no interval)"
    return f"{gap.points:+.1f} [{100 * gap.low:+.1f}, {100 * gap.high:+.1f}]"


def write_results(path: Path, per_seed: PerSeed, settings: Mapping[str, Any]) -> None:
    data = {
        "settings": dict(settings),
        "seeds": {str(seed): [asdict(r) for r in results] for seed, results in per_seed.items()},
    }
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_results(paths: Sequence[Path]) -> dict[int, list[ConditionResult]]:
    """The seeds of every file ``write_results`` wrote (ValueError for a seed in two files)."""
    per_seed: dict[int, list[ConditionResult]] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for seed, results in data["seeds"].items():
            if int(seed) in per_seed:
                raise ValueError(f"seed {seed} is in {path} and in an earlier file")
            per_seed[int(seed)] = [_condition_result(row) for row in results]
    return per_seed


def _condition_result(row: Mapping[str, Any]) -> ConditionResult:
    return ConditionResult(
        **{
            **row,
            "solved_by_turn": tuple(row["solved_by_turn"]),
            "per_task": tuple(tuple(task) for task in row.get("per_task", ())),
        }
    )


# The figure's geometry, in SVG user units.
WIDTH, HEIGHT = 640, 400
LEFT, RIGHT, TOP, BOTTOM = 60, 170, 40, 50


def figure_svg(
    curves: Mapping[str, Sequence[Proportion]], title: str, horizon: int | None = None
) -> str:
    """Accuracy after turn k per condition: a line through the pooled rates, a bar for each
    95% interval, conditions side by side at each turn so that the bars do not overlap; a dashed
    line at the training ``horizon``."""
    turns = len(next(iter(curves.values())))
    top = max(p.high for curve in curves.values() for p in curve)
    y_max = max(0.1, (int(top * 10) + 1) / 10)  # the next 10% above every interval
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(turn: int, offset: float = 0.0) -> float:
        return LEFT + plot_w * (turn - 0.5 + offset) / turns

    def y(rate: float) -> float:
        return TOP + plot_h * (1 - rate / y_max)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="14">{escape(title)}</text>',
    ]
    for tick in range(round(y_max * 10) + 1):
        rate = tick / 10
        parts.append(
            f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(rate):.1f}" y2="{y(rate):.1f}" '
            'stroke="#eaecf0"/>'
            f'<text x="{LEFT - 8}" y="{y(rate) + 4:.1f}" text-anchor="end">{tick * 10}%</text>'
        )
    for turn in range(1, turns + 1):
        parts.append(
            f'<text x="{x(turn):.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{turn}</text>'
        )
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">turn k</text>'
        f'<text transform="translate(16 {TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">'
        "accuracy after turn k</text>"
    )
    if horizon is not None:
        edge = x(horizon) + plot_w / turns / 2
        parts.append(
            f'<line x1="{edge:.1f}" x2="{edge:.1f}" y1="{TOP}" y2="{TOP + plot_h}" '
            'stroke="#98a2b3" stroke-dasharray="4 4"/>'
            f'<text x="{edge - 4:.1f}" y="{TOP + 12}" text-anchor="end" fill="#667085">'
            "training horizon</text>"
        )
    spread = 0.3 / max(1, len(curves) - 1)
    for index, (condition, curve) in enumerate(curves.items()):
        colour = COLOURS.get(condition, "#101828")
        offset = (index - (len(curves) - 1) / 2) * spread
        points = " ".join(
            f"{x(k, offset):.1f},{y(p.rate):.1f}" for k, p in enumerate(curve, start=1)
        )
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>'
        )
        for k, p in enumerate(curve, start=1):
            cx = x(k, offset)
            parts.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(p.low):.1f}" y2="{y(p.high):.1f}" '
                f'stroke="{colour}"/><circle cx="{cx:.1f}" cy="{y(p.rate):.1f}" r="3" '
                f'fill="{colour}"/>'
            )
        legend_y = TOP + 10 + 20 * index
        parts.append(
            f'<line x1="{WIDTH - RIGHT + 15}" x2="{WIDTH - RIGHT + 35}" y1="{legend_y}" '
            f'y2="{legend_y}" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{WIDTH - RIGHT + 40}" y="{legend_y + 4}">'
            f"{escape(LABELS.get(condition, condition))}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
