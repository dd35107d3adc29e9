"""The miniature reproduction's report (``manage.py sml_miniature``): per-seed results pooled
into accuracy after turn k with 95% Wilson intervals per condition, the gains over the base model
paired over held-out tasks (``webapp.metrics.comparison``, as on every comparison page), the
results as JSON (to report again without training), and the figure as a standalone SVG (no
plotting library: the docs show it as it is)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from html import escape
from pathlib import Path
from typing import Any

from models_gpu.spec.reports import MoveCounts
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
            "feedback_use": _move_counts(row.get("feedback_use", ())),
            "outside_solved_by_turn": tuple(row.get("outside_solved_by_turn", ())),
            "outside_feedback_use": _move_counts(row.get("outside_feedback_use", ())),
            "reward_history": tuple(tuple(point) for point in row.get("reward_history", ())),
        }
    )


def _move_counts(rows: Sequence[Mapping[str, Any]]) -> tuple[MoveCounts, ...]:
    return tuple(MoveCounts(**counts) for counts in rows)


def pooled_feedback_use(
    per_seed: PerSeed, condition: str, *, outside: bool = False
) -> list[MoveCounts]:
    """``condition``'s feedback use per turn, every seed's moves pooled (empty for results
    written before it was recorded)."""
    rows = [r for results in per_seed.values() for r in results if r.condition == condition]
    per_turn = [r.outside_feedback_use if outside else r.feedback_use for r in rows]
    if not per_turn or not all(per_turn):
        return []
    return [sum(turn, MoveCounts()) for turn in zip(*per_turn, strict=True)]


def later_moves(counts: Sequence[MoveCounts]) -> MoveCounts:
    """The moves after each dialogue's first, all turns together."""
    return sum(counts[1:], MoveCounts())


def feedback_use_lines(per_seed: PerSeed, conditions: Sequence[str]) -> list[str]:
    """Per condition: valid guesses, then per turn k >= 2 the share of guesses consistent with
    the feedback so far [95% Wilson] and (after a slash) what a random valid guesser would score
    there. Empty when the results predate feedback use."""
    pooled_by = {c: pooled_feedback_use(per_seed, c) for c in conditions}
    if not all(pooled_by.values()):
        return []
    turns = len(next(iter(pooled_by.values())))
    header = "condition    valid guesses" + "".join(
        f"{f'turn {k}':>24}" for k in range(2, turns + 1)
    )
    lines = [header]
    for condition, counts in pooled_by.items():
        total = sum(counts, MoveCounts())
        valid = wilson_interval(total.valid, total.moves)
        cells = "".join(f"{_consistency_cell(turn):>24}" for turn in counts[1:])
        lines.append(f"{condition:<13}{valid.percent:>12.1f}%{cells}")
    return lines


def outside_lines(per_seed: PerSeed, conditions: Sequence[str]) -> list[str]:
    """Accuracy after turn k on the outside ranges per condition [95% Wilson], seeds pooled;
    empty when the results predate outside ranges."""
    rows = [r for results in per_seed.values() for r in results]
    if not rows or not all(r.outside_dialogues for r in rows):
        return []
    turns = len(rows[0].outside_solved_by_turn)
    lines = ["condition    " + "".join(f"{f'turn {k}':>22}" for k in range(1, turns + 1))]
    for condition in conditions:
        mine = [r for r in rows if r.condition == condition]
        total = sum(r.outside_dialogues for r in mine)
        curve = [
            wilson_interval(sum(r.outside_solved_by_turn[k] for r in mine), total)
            for k in range(turns)
        ]
        cells = "".join(
            f"{f'{p.percent:.1f} [{p.low_percent:.1f}, {p.high_percent:.1f}]':>22}" for p in curve
        )
        lines.append(f"{condition:<13}{cells}")
    return lines


def reward_lines(per_seed: PerSeed) -> list[str]:
    """Each trained condition's mean reward by logged step, per seed."""
    return [
        f"seed {seed} {r.condition}: "
        + ", ".join(f"{step}: {reward:.2f}" for step, reward in r.reward_history)
        for seed, results in sorted(per_seed.items())
        for r in results
        if r.reward_history
    ]


def _consistency_cell(counts: MoveCounts) -> str:
    if not counts.later:
        return "no moves"
    share = wilson_interval(counts.consistent, counts.later)
    chance = f"/{100 * counts.chance:.0f}" if counts.chance is not None else ""
    return f"{share.percent:.1f} [{share.low_percent:.0f}, {share.high_percent:.0f}]{chance}"


def report_lines(per_seed: PerSeed, conditions: Sequence[str]) -> list[str]:
    """Every table of the report, with their titles: held-out accuracy and the gains, outside
    ranges, feedback use, training rewards (the sections an older results file has)."""
    turns = len(next(iter(per_seed.values()))[0].solved_by_turn)
    curves = pooled(per_seed, conditions, turns)
    lines = [
        f"Accuracy after turn k on held-out tasks, seeds {sorted(per_seed)} pooled, "
        "95% Wilson intervals:",
        *table_lines(per_seed, curves),
    ]
    sections = (
        ("Accuracy after turn k on ranges outside every training range (seeds pooled):",
         outside_lines(per_seed, conditions)),
        ("How the guesses used the feedback (held out, seeds pooled): valid guesses, then per "
         "turn the share consistent with all feedback so far [95% Wilson] / what a random "
         "valid guesser would score:", feedback_use_lines(per_seed, conditions)),
        ("Mean training reward by step:", reward_lines(per_seed)),
    )  # fmt: skip
    for title, section in sections:
        if section:
            lines += ["", title, *section]
    return lines


def headline(per_seed: PerSeed, conditions: Sequence[str]) -> dict[str, float]:
    """Online SML's gains over the base (points) at turn 1 and the last turn, and the share of
    later guesses consistent with the feedback (%), base and online, where recorded."""
    if "online" not in conditions:
        return {}
    turns = len(next(iter(per_seed.values()))[0].solved_by_turn)
    online = gains(per_seed, "online", turns)
    figures = {"gain_turn_1": online[0].points, f"gain_turn_{turns}": online[-1].points}
    for condition in ("base", "online"):
        later = later_moves(pooled_feedback_use(per_seed, condition))
        if later.later:
            figures[f"consistent_{condition}"] = 100 * later.consistent / later.later
    return figures


def save_latest(
    directory: Path,
    *,
    report: Sequence[str],
    headline: Mapping[str, float],
    svg: str,
    seeds: Sequence[int],
) -> None:
    """Keep the report as the latest result (``spec.miniature.LATEST_REPORT`` and
    ``LATEST_FIGURE``), which the demo's home page shows."""
    from datetime import UTC, datetime

    from models_gpu.spec.miniature import LATEST_FIGURE, LATEST_REPORT

    directory.mkdir(parents=True, exist_ok=True)
    data = {
        "finished": datetime.now(UTC).isoformat(timespec="seconds"),
        "seeds": list(seeds),
        "report": list(report),
        "headline": {name: round(value, 1) for name, value in headline.items()},
    }
    (directory / LATEST_REPORT).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (directory / LATEST_FIGURE).write_text(svg, encoding="utf-8")


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
