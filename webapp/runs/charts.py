"""Plotly figures as pure functions: data in, figure JSON out (plotly.js is served statically)."""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from webapp.runs.metrics import TurnAccuracy


def accuracy_by_turn_figure(curve: list[TurnAccuracy], *, label: str) -> dict[str, Any]:
    turns = [point.turn for point in curve]
    rates = [point.accuracy.rate for point in curve]
    figure = go.Figure(
        go.Scatter(
            x=turns,
            y=rates,
            mode="lines+markers",
            name=label,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [p.accuracy.high - p.accuracy.rate for p in curve],
                "arrayminus": [p.accuracy.rate - p.accuracy.low for p in curve],
            },
            customdata=[[p.accuracy.successes, p.accuracy.total] for p in curve],
            hovertemplate="after turn %{x}: %{y:.1%} (%{customdata[0]}/%{customdata[1]})"
            "<extra></extra>",
        )
    )
    figure.update_layout(
        title="Cumulative accuracy after turn k (95% Wilson intervals)",
        xaxis={"title": "turn k", "dtick": 1, "range": [0.5, max(turns, default=1) + 0.5]},
        yaxis={"title": "solved by turn k", "range": [0, 1.02], "tickformat": ".0%"},
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=360,
        template="plotly_white",
    )
    # Through JSON so numpy values become plain numbers the template can embed safely.
    return json.loads(figure.to_json())
