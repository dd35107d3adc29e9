"""The training run page's curves: loss, learning rate, gradient norm and throughput by step."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from webapp.runs.charts import COLOURS

PANELS = (
    ("loss", "Loss (trained tokens)"),
    ("learning_rate", "Learning rate"),
    ("grad_norm", "Gradient norm"),
    ("tokens_per_second", "Tokens per second"),
)


def training_curves_figure(points: Mapping[str, Sequence[tuple[int, float]]]) -> dict[str, Any]:
    """One panel per curve, by optimizer step; ``points[name]`` is [(step, value)]."""
    figure = make_subplots(rows=2, cols=2, subplot_titles=[title for _, title in PANELS])
    for index, (name, title) in enumerate(PANELS):
        steps = points.get(name, ())
        figure.add_trace(
            go.Scatter(
                x=[step for step, _ in steps],
                y=[value for _, value in steps],
                mode="lines",
                name=title,
                line={"color": COLOURS[index]},
                hovertemplate=f"step %{{x}}: %{{y:.4g}}<extra>{title}</extra>",
            ),
            row=index // 2 + 1,
            col=index % 2 + 1,
        )
    if not any(points.values()):
        figure.add_annotation(
            text="no training steps logged yet", x=0.5, y=0.5, xref="paper", yref="paper",
            showarrow=False, font={"size": 14, "color": "#667085"},
        )  # fmt: skip
    figure.update_layout(
        showlegend=False, height=460, margin={"l": 50, "r": 20, "t": 40, "b": 40},
        template="plotly_white",
    )  # fmt: skip
    figure.update_xaxes(title_text="step", row=2)
    result: dict[str, Any] = json.loads(figure.to_json())
    return result
