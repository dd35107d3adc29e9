"""The comparison page's figures (Plotly JSON; ``webapp.core.figure_export`` draws the same
JSON for papers)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from webapp.experiments.comparison import Line, LineGap
from webapp.experiments.lic import LicMetrics
from webapp.runs.charts import COLOURS, LINE_CHART_LAYOUT


def _error_bars(
    values: Sequence[float],
    lows: Sequence[float | None],
    highs: Sequence[float | None],
    colour: str,
) -> dict[str, Any]:
    """Plotly's asymmetric error bars from the bounds; a point without an interval (None) gets
    none, and none in the figure's CSV either."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [
            None if high is None else high - v for v, high in zip(values, highs, strict=True)
        ],
        "arrayminus": [
            None if low is None else v - low for v, low in zip(values, lows, strict=True)
        ],
        "color": colour,
    }


def _layout(
    figure: go.Figure,
    *,
    title: str,
    y_title: str,
    turns: int,
    y_range: list[float] | None = None,
    x_title: str = "turn k",
) -> dict[str, Any]:
    yaxis: dict[str, Any] = {"title": y_title, "tickformat": ".0%"}
    if y_range:
        yaxis["range"] = y_range
    figure.update_layout(
        title=title,
        xaxis={"title": x_title, "dtick": 1, "range": [0.5, turns + 0.5]},
        yaxis=yaxis,
        height=400,
        **LINE_CHART_LAYOUT,
    )
    # Through JSON so numpy values become plain numbers the template can embed safely.
    figure_json: dict[str, Any] = json.loads(figure.to_json())
    return figure_json


def comparison_figure(lines: Sequence[Line]) -> dict[str, Any]:
    """Accuracy after turn k of each line with its interval; a dotted line at each trained
    student's training horizon."""
    figure = go.Figure()
    for index, line in enumerate(lines):
        colour = COLOURS[index % len(COLOURS)]
        points = [point for point in line.points if point.value is not None]
        values = [point.value or 0.0 for point in points]
        lows = [point.low for point in points]
        highs = [point.high for point in points]
        figure.add_trace(
            go.Scatter(
                x=[point.turn for point in points],
                y=values,
                mode="lines+markers",
                name=line.label + (" (partial)" if line.partial else ""),
                line={"color": colour},
                error_y=_error_bars(values, lows, highs, colour),
                hovertemplate=f"{line.label}<br>after turn %{{x}}: %{{y:.1%}} "
                f"({line.interval_name})<extra></extra>",
            )
        )
        turns = max(other.max_turns for other in lines)
        if points and line.max_turns < turns:
            # Its dialogues ended at its max turns: at every later k it stands where it ended
            # (as the differences from the baseline count it).
            last = points[-1]
            figure.add_trace(
                go.Scatter(
                    x=[last.turn, turns],
                    y=[last.value, last.value],
                    mode="lines",
                    line={"color": colour, "dash": "dot"},
                    showlegend=False,
                    name=f"{line.label} (as after turn {line.max_turns})",
                    hovertemplate=f"{line.label}: ended at turn {line.max_turns}, "
                    "%{y:.1%}<extra></extra>",
                )
            )
        if line.training_horizon is not None:
            figure.add_vline(
                x=line.training_horizon,
                line={"dash": "dot", "width": 1, "color": colour},
                annotation={
                    "text": f"training horizon {line.training_horizon}",
                    "font": {"size": 11},
                },
                annotation_position="top left",
            )
    turns = max((line.max_turns for line in lines), default=1)
    return _layout(
        figure, title="Accuracy after turn k", y_title="solved by turn k", y_range=[0, 1.02],
        turns=turns,
    )  # fmt: skip


def gap_figure(baseline: Line, gaps: Sequence[LineGap], lines: Sequence[Line]) -> dict[str, Any]:
    """Each line minus the baseline, turn by turn, with its 95% interval (none where the
    comparison has none: no information, or no spread)."""
    figure = go.Figure()
    colour_of = {line.key: COLOURS[index % len(COLOURS)] for index, line in enumerate(lines)}
    for gap in gaps:
        colour = colour_of[gap.line.key]
        values = [point.value for point in gap.gaps]
        figure.add_trace(
            go.Scatter(
                x=[point.turn for point in gap.gaps],
                y=values,
                mode="lines+markers",
                name=f"{gap.line.label} − baseline ({gap.final.method if gap.final else ''})",
                line={"color": colour},
                error_y=_error_bars(
                    values, [p.low for p in gap.gaps], [p.high for p in gap.gaps], colour
                ),
                customdata=[
                    [p.method_description if p.informative else p.note, p.tasks] for p in gap.gaps
                ],
                hovertemplate="after turn %{x}: %{y:+.1%} (%{customdata[0]}, "
                "%{customdata[1]} tasks)<extra></extra>",
            )
        )
    figure.add_hline(y=0, line={"width": 1, "color": "#667085"})
    turns = max((len(gap.gaps) for gap in gaps), default=1)
    title = f"Difference from {baseline.label} (95% intervals)"
    return _layout(figure, title=title, y_title="difference in solved by turn k", turns=turns)


def lic_conditions_figure(metrics: LicMetrics) -> dict[str, Any]:
    """Mean score by condition with its bootstrap interval, and aptitude beside it."""
    shown = [c for c in metrics.conditions if c.mean is not None]
    means = [c.mean or 0.0 for c in shown]
    figure = go.Figure()
    # Aptitude first: a trace drawn later lies on top, and the mean with its interval is the
    # figure's point (drawn over the aptitude marker when the two are equal, as at 0 and 100%).
    figure.add_trace(
        go.Scatter(
            x=[c.condition for c in shown],
            y=[c.aptitude for c in shown],
            mode="markers",
            name="aptitude (90th percentile)",
            legendrank=2,
            marker={
                "color": COLOURS[1],
                "size": 12,
                "symbol": "diamond-open",
                "line": {"width": 2},
            },
        )
    )
    figure.add_trace(
        go.Scatter(
            x=[c.condition for c in shown],
            y=means,
            mode="markers",
            name="mean score",
            legendrank=1,
            marker={"color": COLOURS[0], "size": 10},
            error_y=_error_bars(
                means,
                [c.mean_low for c in shown],
                [c.mean_high for c in shown],
                COLOURS[0],
            ),
        )
    )
    figure.update_layout(
        title="Lost in Conversation: score by condition (95% bootstrap interval over instructions)",
        xaxis={"title": "condition"},
        yaxis={"title": "score", "range": [0, 1.02], "tickformat": ".0%"},
        height=380,
        **LINE_CHART_LAYOUT,
    )
    figure_json: dict[str, Any] = json.loads(figure.to_json())
    return figure_json


def premature_figure(metrics: LicMetrics) -> dict[str, Any]:
    """SHARDED: mean score against the turn of the first attempt (dialogues that never
    attempted are in the page's table, not on this axis)."""
    points = [p for p in metrics.premature if p.turn is not None and p.score.mean is not None]
    means = [p.score.mean or 0.0 for p in points]
    lows = [p.score.low for p in points]
    highs = [p.score.high for p in points]
    figure = go.Figure(
        go.Scatter(
            x=[p.turn for p in points],
            y=means,
            mode="lines+markers",
            name="SHARDED",
            line={"color": COLOURS[2]},
            error_y=_error_bars(means, lows, highs, COLOURS[2]),
            customdata=[p.score.count for p in points],
            hovertemplate="first attempt at turn %{x}: %{y:.1%} "
            "(%{customdata} dialogues)<extra></extra>",
        )
    )
    turns = max((p.turn or 1 for p in points), default=1)
    return _layout(
        figure, title="Premature answering: score against the turn of the first attempt",
        y_title="mean score", turns=turns, y_range=[0, 1.02],
        x_title="turn of the first answer attempt",
    )  # fmt: skip
