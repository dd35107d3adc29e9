"""The README's first walk, from a notebook or a script, on the demo project.

Make a task set of your own, play a small grid of protocols x seeds on it, wait with a progress
bar, read accuracy after turn k into pandas, compare the feedback protocol with one turn by the
compare page's paired method, draw the comparison, and read the dialogues that stayed unsolved.

    bash scripts/demo.sh                 # in one terminal: Dialab with its demo project
    # make a token on http://127.0.0.1:8000/account/tokens/ (log in as demo / dialab-demo)
    DIALAB_URL=http://127.0.0.1:8000 DIALAB_TOKEN=dialab_... python docs/examples/first_walk.py

It needs the client with its notebook extras (``pip install "./client[notebook]"``) and, to
draw, plotly; ``tests/e2e/test_api_first_walk.py`` runs it against a live server and a worker.
"""

from __future__ import annotations

from typing import Any

from dialab_client import Dialab


def first_walk(
    lab: Dialab, *, seeds: tuple[int, ...] = (0, 1, 2), draw_to: str | None = "comparison.html"
) -> dict[str, Any]:
    print(f"Acting as {lab.me().username}")
    models = {model.name: model.id for model in lab.models.list()}
    protocols = {protocol.name: protocol for protocol in lab.protocols.list()}
    student, teacher = models["scripted arithmetic student"], models["scripted feedback teacher"]
    didactic, single_turn = protocols["Didactic, 5 turns"], protocols["Single turn"]

    # 1. A task set of your own: twenty additions, checked as numbers.
    task_set = lab.task_sets.create("Additions (from a notebook)")
    tasks = [
        {
            "prompt": f"What is {n} + {2 * n + 7}?",
            "reference": {"answer": str(3 * n + 7)},
            "verifier_kind": "numeric",
            "domain": "arithmetic",
        }
        for n in range(11, 31)
    ]
    lab.task_sets.add(task_set.id, tasks)

    # 2. The grid: each protocol with each seed. A single-turn protocol has no teacher (the
    #    launch would refuse one, naming the field).
    launched = [
        lab.runs.launch(
            task_set=task_set.id,
            protocol=protocol.id,
            student=student,
            teacher=teacher if protocol.mode == "didactic" else None,
            seed=seed,
            name=f"{protocol.name}, seed {seed} (notebook)",
        )
        for protocol in (single_turn, didactic)
        for seed in seeds
    ]
    runs = lab.runs.wait([run.id for run in launched], progress=True)
    failed = [run for run in runs if run.status != "succeeded"]
    if failed:
        raise RuntimeError(f"runs that did not succeed: {[(r.id, r.status) for r in failed]}")

    # 3. Accuracy after turn k of every run, with 95% intervals, as the run pages show it.
    figures = lab.runs.figures([run.id for run in runs])
    accuracy = figures.to_pandas().query("metric == 'accuracy_after_turn'")
    print(accuracy[["run", "k", "value", "low", "high"]].to_string(index=False))

    # 4. The comparison page's figures: one line per protocol (its seeds pooled), the didactic
    #    line's gain over one turn at each k, paired over the tasks both played.
    comparison = lab.runs.compare([run.id for run in runs], baseline=runs[0].id)
    table = comparison.to_pandas()
    print(table[["line", "turn", "value", "gap", "gap_low", "gap_high"]].to_string(index=False))

    if draw_to:
        draw(comparison, draw_to)

    # 5. What the teacher could not fix: the didactic runs' unsolved dialogues, one read whole.
    didactic_runs = [run.id for run in runs if run.name.startswith(didactic.name)]
    unsolved = [
        row
        for run_id in didactic_runs
        for row in lab.dialogues.iter(f"run={run_id}&outcome=unsolved")
    ]
    print(f"{len(unsolved)} dialogues stayed unsolved under the didactic protocol")
    if unsolved:
        dialogue = lab.dialogues.get(unsolved[0].id)
        for turn in dialogue.turns:
            print(f"{turn.role:>8}: {turn.text}")
    return {"task_set": task_set, "runs": runs, "comparison": comparison, "unsolved": unsolved}


def draw(comparison: Any, path: str) -> None:
    """Accuracy after turn k, a line per protocol with its 95% interval (Plotly, to HTML)."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for line in comparison.lines:
        points = [point for point in line.points if point.value is not None]
        figure.add_trace(
            go.Scatter(
                x=[point.turn for point in points],
                y=[point.value for point in points],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [(point.high or point.value) - point.value for point in points],
                    "arrayminus": [point.value - (point.low or point.value) for point in points],
                },
                name=line.label,
                mode="lines+markers",
            )
        )
    figure.update_layout(xaxis_title="turn k", yaxis_title="accuracy after turn k")
    figure.write_html(path, include_plotlyjs="cdn")
    print(f"Drew the comparison to {path}")


if __name__ == "__main__":
    with Dialab() as lab:  # DIALAB_URL and DIALAB_TOKEN
        first_walk(lab)
