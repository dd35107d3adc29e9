"""The online training page's panels (webapp.training.charts): shares run from 0 to 100%, and
every panel has its axes and a note before it has anything to draw (issue 33)."""

from __future__ import annotations

from models_gpu.spec.reports import Curve
from webapp.training.charts import ONLINE_PANELS, SHARES, training_curves_figure


def axis(figure: dict, letter: str, panel: int) -> dict:  # type: ignore[type-arg]
    return figure["layout"][f"{letter}axis{'' if panel == 0 else panel + 1}"]


def test_before_the_first_step_every_panel_has_axes_and_says_why_it_is_empty() -> None:
    figure = training_curves_figure({}, ONLINE_PANELS)
    drawn = {(trace["xaxis"], trace["yaxis"]) for trace in figure["data"]}
    assert len(drawn) == len(ONLINE_PANELS), "each panel has a trace, so Plotly draws its axes"
    notes = [a for a in figure["layout"]["annotations"] if "domain" in a.get("xref", "")]
    assert [a["text"] for a in notes] == ["no training steps logged yet"] * len(ONLINE_PANELS)
    for panel in range(len(ONLINE_PANELS)):
        assert axis(figure, "x", panel)["range"] == [0, 10]
        low, high = axis(figure, "y", panel)["range"]
        assert -0.05 < low <= 0 and 1 <= high < 1.05, "0 to 1 (or 0 to 100%), never -1 to 1"


def test_shares_are_percentages_from_0_to_100_whatever_their_values() -> None:
    points = {
        Curve.QUESTION_RATE: [(1, 0.0), (2, 0.0)],  # constant 0: Plotly's own range is -1 to 1
        Curve.ROLLOUT_ACCURACY_AFTER_TURN_.at(1): [(1, 0.5), (2, 0.75)],
        Curve.HELDOUT_DIALOGUES: [(2, 8)],
        Curve.HELDOUT_SOLVED_BY_TURN_.at(1): [(2, 2)],
        Curve.REWARD: [(1, 0.1), (2, 0.3)],
    }
    figure = training_curves_figure(points, ONLINE_PANELS)
    for panel, (_, names) in enumerate(ONLINE_PANELS):
        if SHARES & set(names):
            y = axis(figure, "y", panel)
            assert y["tickformat"] == ".0%" and y["range"] == [-0.03, 1.03]
    traces = {trace["name"]: trace for trace in figure["data"] if trace.get("name")}
    assert "%{y:.1%}" in traces["Question rate"]["hovertemplate"]
    assert "%{y:.4g}" in traces["Mean reward of the step's dialogues"]["hovertemplate"]
    held_out = traces["Held-out accuracy after turn k (95% Wilson)"]
    assert held_out["y"] == [0.25] and held_out["error_y"]["array"][0] > 0
    notes = [a["text"] for a in figure["layout"]["annotations"] if "domain" in a.get("xref", "")]
    assert notes == ["nothing logged yet"] * 4, "equal groups, tokens, seconds and loss"


def test_held_out_panel_without_an_evaluation_yet_says_so() -> None:
    figure = training_curves_figure({Curve.REWARD: [(1, 0.2)]}, ONLINE_PANELS)
    notes = [a["text"] for a in figure["layout"]["annotations"] if "domain" in a.get("xref", "")]
    assert "no held-out evaluation yet" in notes
    assert axis(figure, "x", 1)["range"] == [0, 10]


def test_a_short_run_ticks_whole_steps_only() -> None:
    """Two steps drew ticks at 1, 1.5 and 2: steps are whole numbers."""
    short = training_curves_figure({Curve.REWARD: [(1, 0.2), (2, 0.3)]}, ONLINE_PANELS)
    assert {axis(short, "x", panel).get("dtick") for panel in range(len(ONLINE_PANELS))} == {1}
    long = training_curves_figure({Curve.REWARD: [(step, 0.2) for step in range(1, 200)]})
    assert "dtick" not in axis(long, "x", 0), "a long run keeps Plotly's own ticks"
