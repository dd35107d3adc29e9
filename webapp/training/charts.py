"""The training run page's curves by step: loss, learning rate, gradient norm and throughput;
for online training, the rollouts' reward and figures and the held-out accuracy after turn k
(from the evaluations' counts, with 95% Wilson intervals). Curve names: ``spec.reports.Curve``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models_gpu.spec.reports import PRIMING_PREFIX, Curve
from models_gpu.spec.training_run import TrainingRunConfig
from webapp.metrics.stats import wilson_interval
from webapp.runs.charts import COLOURS

# (title, the curves it draws); a family (a name ending in "_") draws every curve of it, one per
# turn k ("rollout_turn_1", "rollout_turn_2", ...). Panels of shares draw percentages.
Panel = tuple[str, tuple[str, ...]]
PANELS: tuple[Panel, ...] = (
    ("Loss (trained tokens)", (Curve.LOSS,)),
    ("Learning rate", (Curve.LEARNING_RATE,)),
    ("Gradient norm", (Curve.GRAD_NORM,)),
    ("Tokens per second", (Curve.TOKENS_PER_SECOND,)),
)
ONLINE_PANELS: tuple[Panel, ...] = (
    ("Mean reward of the step's dialogues", (Curve.REWARD,)),
    ("Held-out accuracy after turn k (95% Wilson)", (Curve.HELDOUT_SOLVED_BY_TURN_,)),
    ("Rollouts: accuracy after turn k", (Curve.ROLLOUT_ACCURACY_AFTER_TURN_,)),
    ("Groups whose rewards are all equal", (Curve.ZERO_VARIANCE_GROUPS,)),
    ("Student tokens per dialogue", (Curve.STUDENT_TOKENS,)),
    ("Question rate", (Curve.QUESTION_RATE,)),
    ("Seconds per step: rollout, update", (Curve.ROLLOUT_SECONDS, Curve.UPDATE_SECONDS)),
    ("Loss", (Curve.LOSS,)),
)
PRIMING_PANELS: tuple[Panel, ...] = (("Priming stage: loss", (f"{PRIMING_PREFIX}{Curve.LOSS}",)),)
SHARES = {
    Curve.HELDOUT_SOLVED_BY_TURN_,
    Curve.ROLLOUT_ACCURACY_AFTER_TURN_,
    Curve.ZERO_VARIANCE_GROUPS,
    Curve.QUESTION_RATE,
}
# Up to this many steps, every step has a tick (and no tick falls between two steps).
WHOLE_STEP_TICKS_UP_TO = 10
LABELS: dict[str, str] = {Curve.ROLLOUT_SECONDS: "rollout", Curve.UPDATE_SECONDS: "update"}


def training_panels(config: TrainingRunConfig) -> tuple[Panel, ...]:
    """The panels of a training run's page."""
    if not config.is_online:
        return PANELS
    return ONLINE_PANELS + (PRIMING_PANELS if config.priming else ())


def training_curves_figure(
    points: Mapping[str, Sequence[tuple[int, float]]], panels: Sequence[Panel] = PANELS
) -> dict[str, Any]:
    """One panel per entry of ``panels``, two a row, by optimizer step; ``points[name]`` is
    [(step, value)]. Every panel has its axes from the start: one with nothing to draw yet
    says so inside them; shares run from 0 to 100%."""
    rows = (len(panels) + 1) // 2
    figure = make_subplots(rows=rows, cols=2, subplot_titles=[title for title, _ in panels])
    last_step = max((step for values in points.values() for step, _ in values), default=0)
    for index, (title, names) in enumerate(panels):
        cell = {"row": index // 2 + 1, "col": index % 2 + 1}
        curves = [name for name in _curve_names(points, names) if points.get(name)]
        share = any(name in SHARES for name in names)
        for colour, name in enumerate(curves):
            several = len(curves) > 1
            label = _label(name) if several else title
            figure.add_trace(
                _trace(
                    points, name, label, COLOURS[(index + colour) % len(COLOURS)], several, share
                ),
                **cell,
            )
        if share:
            # A little room past 0 and 100% so that markers there are not cut in half.
            figure.update_yaxes(tickformat=".0%", range=[-0.03, 1.03], **cell)
        if not curves:
            _empty_panel(figure, index, names, last_step, share)
    figure.update_layout(
        height=230 * rows + 40, margin={"l": 50, "r": 20, "t": 40, "b": 40},
        template="plotly_white", legend={"orientation": "h", "y": -0.08},
    )  # fmt: skip
    figure.update_xaxes(title_text="step", row=rows)
    if last_step <= WHOLE_STEP_TICKS_UP_TO:
        # Steps are whole numbers; over a short run Plotly's own ticks fall between them (1.5).
        figure.update_xaxes(dtick=1)
    result: dict[str, Any] = json.loads(figure.to_json())
    return result


def _empty_panel(
    figure: go.Figure, index: int, names: Sequence[str], last_step: int, share: bool
) -> None:
    """Axes for a panel with no points yet (an empty trace, or Plotly draws none), spanning
    the steps so far, and a note inside them saying what is missing."""
    cell = {"row": index // 2 + 1, "col": index % 2 + 1}
    figure.add_trace(go.Scatter(x=[], y=[], showlegend=False, hoverinfo="skip"), **cell)
    figure.update_xaxes(range=[0, max(last_step, 10)], **cell)
    if not share:
        figure.update_yaxes(range=[0, 1], **cell)
    if not last_step:
        note = "no training steps logged yet"
    elif Curve.HELDOUT_SOLVED_BY_TURN_ in names:
        note = "no held-out evaluation yet"
    else:
        note = "nothing logged yet"
    axis = "" if index == 0 else str(index + 1)
    figure.add_annotation(
        text=note, x=0.5, y=0.5, xref=f"x{axis} domain", yref=f"y{axis} domain",
        showarrow=False, font={"size": 13, "color": "#667085"},
    )  # fmt: skip


def _trace(
    points: Mapping[str, Sequence[tuple[int, float]]],
    name: str,
    label: str,
    colour: str,
    several: bool,
    share: bool,
) -> go.Scatter:
    """One curve (a share's values in %); a held-out evaluation's accuracy from its counts,
    with Wilson intervals."""
    style = {"name": label, "line": {"color": colour}, "showlegend": several}
    if not name.startswith(Curve.HELDOUT_SOLVED_BY_TURN_):
        steps = points.get(name, ())
        return go.Scatter(
            x=[step for step, _ in steps],
            y=[value for _, value in steps],
            mode="lines" if len(steps) > 1 else "markers",  # one point draws no line
            hovertemplate=f"step %{{x}}: %{{y:{'.1%' if share else '.4g'}}}<extra>{label}</extra>",
            **style,
        )
    dialogues = dict(points.get(Curve.HELDOUT_DIALOGUES, ()))
    accuracy = [
        (step, wilson_interval(int(solved), int(dialogues[step])))
        for step, solved in points.get(name, ())
        if dialogues.get(step)
    ]
    return go.Scatter(
        x=[step for step, _ in accuracy],
        y=[p.rate for _, p in accuracy],
        mode="lines+markers",
        error_y={
            "type": "data",
            "symmetric": False,
            "array": [p.high - p.rate for _, p in accuracy],
            "arrayminus": [p.rate - p.low for _, p in accuracy],
            "color": colour,
        },
        customdata=[[p.successes, p.total] for _, p in accuracy],
        hovertemplate="step %{x}: %{y:.1%} (%{customdata[0]}/%{customdata[1]})"
        f"<extra>{label}</extra>",
        **style,
    )


def _curve_names(points: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """``names``, with each prefix ("..._") replaced by the curves it names, by turn."""
    found: list[str] = []
    for name in names:
        if name.endswith("_"):
            matching = [n for n in points if n.startswith(name) and n[len(name) :].isdigit()]
            found += sorted(matching, key=lambda n: int(n[len(name) :]))
        else:
            found.append(name)
    return found


def _label(name: str) -> str:
    families = (
        (Curve.HELDOUT_SOLVED_BY_TURN_, "held-out"),
        (Curve.ROLLOUT_ACCURACY_AFTER_TURN_, "rollouts"),
    )
    for family, what in families:
        if name.startswith(family):
            return f"{what}: after turn {name[len(family) :]}"
    return LABELS.get(name, name)
