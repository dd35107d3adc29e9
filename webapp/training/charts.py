"""The training run page's curves by step: loss, learning rate, gradient norm and throughput;
for online training, the rollouts' reward and figures and the held-out accuracy after turn k."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models_gpu.spec.training_run import TrainingRunConfig
from webapp.runs.charts import COLOURS
from webapp.training.services import PRIMING_CURVES

# (title, the curves it draws); a name ending in "_" draws every curve that starts with it, one
# per turn k ("rollout_turn_1", "rollout_turn_2", ...).
Panel = tuple[str, tuple[str, ...]]
PANELS: tuple[Panel, ...] = (
    ("Loss (trained tokens)", ("loss",)),
    ("Learning rate", ("learning_rate",)),
    ("Gradient norm", ("grad_norm",)),
    ("Tokens per second", ("tokens_per_second",)),
)
ONLINE_PANELS: tuple[Panel, ...] = (
    ("Mean reward of the step's dialogues", ("reward",)),
    ("Held-out accuracy after turn k", ("heldout_turn_",)),
    ("Rollouts: accuracy after turn k", ("rollout_turn_",)),
    ("Groups whose rewards are all equal", ("zero_variance_groups",)),
    ("Student tokens per dialogue", ("student_tokens",)),
    ("Question rate", ("question_rate",)),
    ("Seconds per step: rollout, update", ("rollout_seconds", "update_seconds")),
    ("Loss", ("loss",)),
)
PRIMING_PANELS: tuple[Panel, ...] = (("Priming stage: loss", (f"{PRIMING_CURVES}loss",)),)
LABELS = {"rollout_seconds": "rollout", "update_seconds": "update"}


def training_panels(config: TrainingRunConfig) -> tuple[Panel, ...]:
    """The panels of a training run's page."""
    if not config.is_online:
        return PANELS
    return ONLINE_PANELS + (PRIMING_PANELS if config.priming else ())


def training_curves_figure(
    points: Mapping[str, Sequence[tuple[int, float]]], panels: Sequence[Panel] = PANELS
) -> dict[str, Any]:
    """One panel per entry of ``panels``, two a row, by optimizer step; ``points[name]`` is
    [(step, value)]."""
    rows = (len(panels) + 1) // 2
    figure = make_subplots(rows=rows, cols=2, subplot_titles=[title for title, _ in panels])
    for index, (title, names) in enumerate(panels):
        curves = _curve_names(points, names)
        for colour, name in enumerate(curves):
            steps = points.get(name, ())
            several = len(curves) > 1
            label = _label(name) if several else title
            figure.add_trace(
                go.Scatter(
                    x=[step for step, _ in steps],
                    y=[value for _, value in steps],
                    mode="lines+markers" if name.startswith("heldout_") else "lines",
                    name=label,
                    line={"color": COLOURS[(index + colour) % len(COLOURS)]},
                    hovertemplate=f"step %{{x}}: %{{y:.4g}}<extra>{label}</extra>",
                    showlegend=several,  # a panel of several lines says which is which
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
        height=230 * rows + 40, margin={"l": 50, "r": 20, "t": 40, "b": 40},
        template="plotly_white", legend={"orientation": "h", "y": -0.08},
    )  # fmt: skip
    figure.update_xaxes(title_text="step", row=rows)
    result: dict[str, Any] = json.loads(figure.to_json())
    return result


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
    for prefix, what in (("heldout_turn_", "held-out"), ("rollout_turn_", "rollouts")):
        if name.startswith(prefix):
            return f"{what}: after turn {name[len(prefix) :]}"
    return LABELS.get(name, name)
