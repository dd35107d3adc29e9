"""Plotly figures as pure functions: data in, figure JSON out (plotly.js is served statically)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from webapp.metrics.figures import AccuracyCurve, PassAtK

# Plotly's default qualitative palette, named here so a run's max-turns marker gets its colour.
COLOURS = (
    "#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a",
    "#19d3f3", "#ff6692", "#b6e880", "#ff97ff", "#fecb52",
)  # fmt: skip


# The layout every line chart shares: legend under the plot, room for axis titles, plain theme.
LINE_CHART_LAYOUT: dict[str, Any] = {
    "legend": {"orientation": "h", "y": -0.2},
    "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
    "template": "plotly_white",
}


@dataclass(frozen=True)
class Curve:
    """One run's (or line's) accuracy-by-turn curve as the chart draws it."""

    label: str
    curve: AccuracyCurve
    max_turns: int


def _trace(curve: Curve, colour: str) -> go.Scatter:
    # Turns not known yet (and a run without dialogues) draw no points, not a line at 0%.
    known = [(p.turn, p.accuracy) for p in curve.curve.points if p.accuracy is not None]
    counted = curve.curve.counted
    partial = ", partial" if counted.partial else ""
    return go.Scatter(
        x=[turn for turn, _ in known],
        y=[accuracy.rate for _, accuracy in known],
        mode="lines+markers",
        name=f"{curve.label} (n={counted.dialogues}{partial})",
        line={"color": colour},
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [accuracy.high - accuracy.rate for _, accuracy in known],
            "arrayminus": [accuracy.rate - accuracy.low for _, accuracy in known],
            "color": colour,
        },
        customdata=[
            [accuracy.successes, accuracy.total, accuracy.low, accuracy.high]
            for _, accuracy in known
        ],
        hovertemplate=f"{curve.label}<br>after turn %{{x}}: %{{y:.1%}} "
        "(%{customdata[0]}/%{customdata[1]}; 95% CI %{customdata[2]:.1%}–%{customdata[3]:.1%})"
        "<extra></extra>",
    )


def accuracy_by_turn_figure(curves: Sequence[Curve]) -> dict[str, Any]:
    """Cumulative accuracy after turn k, the first curve being the page's run and the others
    overlays; a dotted line marks each distinct max turns T."""
    figure = go.Figure()
    for index, curve in enumerate(curves):
        figure.add_trace(_trace(curve, COLOURS[index % len(COLOURS)]))
    marked: set[int] = set()
    for index, curve in enumerate(curves):
        if curve.max_turns in marked:
            continue
        marked.add(curve.max_turns)
        figure.add_vline(
            x=curve.max_turns,
            line={"dash": "dot", "width": 1, "color": COLOURS[index % len(COLOURS)]},
            annotation={"text": f"max turns {curve.max_turns}", "font": {"size": 11}},
            annotation_position="bottom left",
        )
    if not any(trace.x for trace in figure.data):
        figure.add_annotation(
            text="no dialogues stored yet", x=0.5, y=0.5, xref="paper", yref="paper",
            showarrow=False, font={"size": 14, "color": "#667085"},
        )  # fmt: skip
    elif curves and curves[0].curve.counted.partial:
        figure.add_annotation(
            text=f"partial: over {curves[0].curve.counted.description}", x=0, y=1, xref="paper",
            yref="paper", xanchor="left", yanchor="bottom", showarrow=False,
            font={"size": 12, "color": "#b54708"},
        )  # fmt: skip
    last_turn = max((curve.max_turns for curve in curves), default=1)
    figure.update_layout(
        title="Cumulative accuracy after turn k (95% Wilson intervals)",
        xaxis={"title": "turn k", "dtick": 1, "range": [0.5, last_turn + 0.5]},
        yaxis={"title": "solved by turn k", "range": [0, 1.02], "tickformat": ".0%"},
        height=380,
        **LINE_CHART_LAYOUT,
    )
    # Through JSON so numpy values become plain numbers the template can embed safely.
    figure_json: dict[str, Any] = json.loads(figure.to_json())
    return figure_json


def pass_at_k_figure(points: Sequence[PassAtK], *, samples_per_task: int) -> dict[str, Any]:
    """pass@k for k = 1..K as a curve: a table of K columns does not fit a card once K is in
    the tens (the page keeps the numbers in a collapsed table and the metrics CSV)."""
    figure = go.Figure(
        go.Scatter(
            x=[point.k for point in points],
            y=[point.value for point in points],
            mode="lines+markers",
            name="pass@k",
            line={"color": COLOURS[0]},
            customdata=[point.tasks for point in points],
            hovertemplate="pass@%{x}: %{y:.3f} (over %{customdata} tasks)<extra></extra>",
        )
    )
    if not points:
        figure.add_annotation(
            text="no dialogues stored yet", x=0.5, y=0.5, xref="paper", yref="paper",
            showarrow=False, font={"size": 14, "color": "#667085"},
        )  # fmt: skip
    figure.update_layout(
        title=f"pass@k for k = 1..{samples_per_task} ({samples_per_task} samples per task)",
        # Whole numbers of samples only (about ten ticks, however many samples).
        xaxis={
            "title": "k (samples drawn per task)",
            "range": [0.5, samples_per_task + 0.5],
            "dtick": max(1, samples_per_task // 10),
        },
        yaxis={"title": "pass@k", "range": [0, 1.02], "tickformat": ".0%"},
        showlegend=False,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=320,
        template="plotly_white",
    )
    figure_json: dict[str, Any] = json.loads(figure.to_json())
    return figure_json
