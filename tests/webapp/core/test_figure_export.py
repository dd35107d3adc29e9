"""Figures for papers (webapp.core.figure_export): the page's Plotly figure as SVG, PNG and PDF,
drawn by matplotlib, and its data as CSV."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest

from webapp.core.figure_export import figure_csv, render
from webapp.training.charts import training_curves_figure

FIGURE = {
    "data": [
        {"type": "scatter", "x": [1, 2], "y": [0.25, 0.5], "name": "base", "mode": "lines+markers",
         "line": {"color": "#636efa"},
         "error_y": {"type": "data", "array": [0.1, 0.2], "arrayminus": [0.05, 0.1]}},
        {"type": "scatter", "x": [2, 3], "y": [0.5, 0.5], "name": "base (as after turn 2)",
         "mode": "lines", "line": {"dash": "dot"}, "showlegend": False},
    ],
    "layout": {"title": {"text": "Accuracy after turn k"}, "yaxis": {"tickformat": ".0%"},
               "shapes": [{"type": "line", "x0": 2, "x1": 2, "y0": 0, "y1": 1, "yref": "y domain",
                           "line": {"dash": "dot"}}]},
}  # fmt: skip


def test_the_csv_is_each_point_with_its_interval() -> None:
    assert figure_csv(FIGURE).splitlines() == [
        "series,x,y,low,high",
        "base,1,0.25,0.2,0.35",
        "base,2,0.5,0.4,0.7",
        "base (as after turn 2),2,0.5,,",
        "base (as after turn 2),3,0.5,,",
    ]


def test_each_format_is_a_file_of_its_kind_and_the_same_figure_gives_the_same_bytes() -> None:
    svg = render(FIGURE, "svg")
    assert svg.startswith(b"<?xml") and b"Accuracy after turn k" in svg
    assert render(FIGURE, "svg") == svg
    assert render(FIGURE, "png").startswith(b"\x89PNG")
    assert render(FIGURE, "pdf").startswith(b"%PDF") and render(FIGURE, "pdf") == render(
        FIGURE, "pdf"
    )
    with pytest.raises(ValueError, match="unknown figure format 'gif'"):
        render(FIGURE, "gif")


def test_subplots_and_plotlys_typed_arrays_are_drawn() -> None:
    points = {"loss": [(1, 2.0), (2, 1.5)], "learning_rate": [(1, 1e-4), (2, 5e-5)]}
    svg = render(training_curves_figure(points), "svg").decode()
    assert "Loss (trained tokens)" in svg and "Learning rate" in svg  # the subplot titles
    typed = go.Figure(go.Scatter(x=[1, 2], y=np.array([0.1, 0.2]), name="numpy")).to_json()
    assert figure_csv(json.loads(typed)).splitlines()[1:] == ["numpy,1,0.1,,", "numpy,2,0.2,,"]


def test_a_point_without_an_interval_has_none_in_the_csv_nor_in_the_drawing() -> None:
    """The comparison's "no information" turns: a value, no interval (not one of zero width)."""
    error = {"type": "data", "symmetric": False, "array": [None, 0.1], "arrayminus": [None, 0.2]}
    made = go.Figure(go.Scatter(x=[1, 2], y=[0.0, 0.3], name="gap", error_y=error)).to_json()
    figure = json.loads(made)
    assert figure_csv(figure).splitlines()[1:] == ["gap,1,0.0,,", "gap,2,0.3,0.1,0.4"]
    assert render(figure, "svg").startswith(b"<?xml")
