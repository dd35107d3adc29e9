"""The Python client and its CLI against a live Dialab server (real HTTP, pytest-django's
live_server): the same figures as the run's metrics CSV, the transcript filter, the scope of an
annotator's token, and the refusals a script sees."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dialab_client import Answer, Dialab, DialabError
from dialab_client.cli import main as cli
from django.db import connection

from tests.api_world import build_world
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world(live_server: Any) -> Iterator[dict[str, Any]]:
    """The API's test world, and ``lab(world, who)``: a client with that person's token. The
    clients are closed at the end: the live server's threads hold a database connection for as
    long as a client keeps its HTTP connection open."""
    clients: list[Dialab] = []
    yield {**build_world(), "url": live_server.url, "clients": clients}
    for client in clients:
        client.close()


def lab(world: dict[str, Any], who: str = "researcher") -> Dialab:
    client = Dialab(world["url"], world[who])
    world["clients"].append(client)
    return client


def test_figures_come_as_the_run_page_computes_them(world: dict[str, Any]) -> None:
    first, second = world["first"].pk, world["second"].pk
    figures = lab(world).runs.figures([first, second])
    assert figures.accuracy_after_turn(first)[1] == 1.0
    assert figures.accuracy_after_turn(second)[1] == 0.0
    assert figures.accuracy_after_turn(second)[2] == 1.0
    table = figures.to_pandas()
    assert set(table["run"]) == {first, second}
    after = table[(table.metric == "accuracy_after_turn") & (table.run == second)]
    assert list(after["successes"])[:2] == [0, 3] and set(after["n"]) == {3}
    assert list(after["k"])[:2] == [1, 2] and str(table["k"].dtype) == "Int64"
    assert (after["low"] <= after["value"]).all() and (after["value"] <= after["high"]).all()


def test_dialogues_iterate_over_pages_with_the_list_filter(world: dict[str, Any]) -> None:
    client = lab(world)
    rows = list(client.dialogues.iter(f"run={world['second'].pk}&outcome=solved", per_page=2))
    assert len(rows) == 3 and {row.run_id for row in rows} == {world["second"].pk}
    # A walk, in id order: the list page's sort, copied with its filter, does not apply.
    walked = list(client.dialogues.iter("sort=-created&page=2", per_page=4))
    assert [row.id for row in walked] == sorted(Dialogue.objects.values_list("pk", flat=True))
    dialogue = client.dialogues.get(rows[0].id)
    assert [turn.role for turn in dialogue.turns] == ["student", "teacher", "student"]
    with pytest.raises(DialabError, match="Ignored turns="):
        list(client.dialogues.iter({"turns": "many"}))


def test_an_annotators_token_reads_only_her_queue(world: dict[str, Any]) -> None:
    client = lab(world, "annotator")
    assert client.me().role == "annotator"
    assert [row.id for row in client.dialogues.iter()] == [world["queued"].pk]
    with pytest.raises(DialabError) as refused:
        client.runs.list()
    assert refused.value.status == 403
    with pytest.raises(DialabError) as hidden:
        client.dialogues.get(world["hidden"].pk)
    assert hidden.value.status == 404


def test_a_revoked_token_is_refused(world: dict[str, Any]) -> None:
    with pytest.raises(DialabError) as refused:
        lab(world, "revoked").me()
    assert refused.value.status == 401


def test_wait_returns_when_every_run_has_finished(world: dict[str, Any]) -> None:
    first = world["first"]
    Run.objects.filter(pk=first.pk).update(status=Run.Status.RUNNING)

    def finish_soon() -> None:
        time.sleep(1.0)
        Run.objects.filter(pk=first.pk).update(status=Run.Status.SUCCEEDED)
        connection.close()  # this thread's own connection: the test database is dropped after

    threading.Thread(target=finish_soon).start()
    runs = lab(world).runs.wait([first.pk, world["second"].pk], poll_seconds=0.2, timeout=30)
    assert [run.status for run in runs] == ["succeeded", "succeeded"]
    Run.objects.filter(pk=first.pk).update(status=Run.Status.RUNNING)
    with pytest.raises(TimeoutError, match=str(first.pk)):
        lab(world).runs.wait(first.pk, poll_seconds=0.1, timeout=0.3)


def test_runs_listed_while_others_come_and_go_are_each_read_once(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client walks a list in id order, each page after the last id read: a run deleted
    between two pages does not push the next one out of reach (as an offset would), and a run
    launched meanwhile is read at the end."""
    import dialab_client.client

    from tests.transcript_builders import make_run

    monkeypatch.setattr(dialab_client.client, "PAGE", 2)
    for name in ("third", "fourth", "fifth"):
        make_run(name, world["first"].task_set)
    before = list(Run.objects.order_by("pk").values_list("pk", flat=True))
    client = lab(world)
    listing = client.pages("/runs")
    read = [next(listing)["id"], next(listing)["id"]]
    Run.objects.filter(pk=before[0]).delete()
    launched = make_run("launched meanwhile", world["first"].task_set)
    read += [run["id"] for run in listing]
    assert read == [*before, launched.pk], "each run once, none skipped"
    newest_first = [run.id for run in client.runs.list()]
    assert newest_first == [launched.pk, *before[:0:-1]]


def test_a_task_set_s_tasks_are_walked_by_position(
    world: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import dialab_client.client

    from tests.factories import TaskFactory, TaskSetFactory

    monkeypatch.setattr(dialab_client.client, "PAGE", 2)
    task_set = TaskSetFactory()
    for position in (0, 1, 2, 5, 7):
        TaskFactory(task_set=task_set, position=position)
    positions = list(task_set.tasks.order_by("position").values_list("position", flat=True))
    walk = lab(world).task_sets.tasks(task_set.pk)
    read = [next(walk).position, next(walk).position]
    task_set.tasks.filter(position=positions[0]).delete()
    read += [task.position for task in walk]
    assert read == positions


def test_the_cli_lists_waits_and_prints_figures(world: dict[str, Any], capsys: Any) -> None:
    auth = ["--url", world["url"], "--token", world["researcher"]]
    second = str(world["second"].pk)
    assert cli([*auth, "runs", "list"]) == 0
    assert "second" in capsys.readouterr().out
    assert cli([*auth, "runs", "list", "--kind", "train"]) == 0
    assert capsys.readouterr().out == ""  # no training run in this world
    assert cli([*auth, "runs", "wait", second, "--quiet"]) == 0
    capsys.readouterr()
    assert cli([*auth, "runs", "figures", second, "--csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("run,metric,k,group,value")
    assert any(line.startswith(f"{second},accuracy_after_turn,2,,1.0") for line in lines)
    assert cli([*auth, "dialogues", "list", f"run={second}"]) == 0
    assert len([json.loads(line) for line in capsys.readouterr().out.splitlines()]) == 3
    assert cli(["--url", world["url"], "--token", world["revoked"], "runs", "list"]) == 1
    assert "401" in capsys.readouterr().err


def test_the_export_streams_records_and_refuses_a_typo(world: dict[str, Any], capsys: Any) -> None:
    client = lab(world)
    records = list(client.dialogues.export(f"run={world['second'].pk}", include_private=True))
    assert len(records) == 3 and all(len(r["turns"]) == 3 for r in records)
    assert all("reference" in record["task"] for record in records)
    with pytest.raises(DialabError, match="Unknown filter 'outcom'"):
        list(client.dialogues.export("outcom=solved"))
    auth = ["--url", world["url"], "--token", world["researcher"]]
    assert cli([*auth, "dialogues", "export", f"run={world['first'].pk}"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3


def test_a_task_set_is_made_from_python_and_from_the_shell(
    world: dict[str, Any], eager_celery: Any, tmp_path: Any, capsys: Any
) -> None:
    client = lab(world)
    made = client.task_sets.create("From a notebook")
    sums = [{"prompt": "1+1?", "reference": {"answer": "2"}, "verifier_kind": "numeric"}]
    added = client.task_sets.add(made.id, sums)
    assert added.added == 1 and not added.new_version and added.task_set.task_count == 1
    assert [task.prompt for task in client.task_sets.tasks(made.id)] == ["1+1?"]
    with pytest.raises(DialabError) as refused:
        client.task_sets.add(made.id, [{"prompt": "2+2?", "reference": {}}])
    assert refused.value.status == 422 and "task 1" in refused.value.problems["tasks"][0]
    upload = tmp_path / "sums.jsonl"
    upload.write_text("".join(json.dumps({"q": f"{n}+1?", "a": n + 1}) + "\n" for n in range(3)))
    auth = ["--url", world["url"], "--token", world["researcher"]]
    command = ["tasks", "import", str(upload), "--map", "prompt=q", "--map", "answer=a"]
    assert cli([*auth, *command, "--verifier-kind", "numeric"]) == 0
    imported = client.task_sets.get(int(capsys.readouterr().out))
    assert imported.name == "sums" and imported.task_count == 3
    assert imported.provenance["mapping"] == {"prompt": "q", "answer": "a"}
    generate = ["tasks", "generate", "guess_number", "--count", "4", "--knob", "high=20"]
    assert cli([*auth, *generate]) == 0
    generated = client.task_sets.get(int(capsys.readouterr().out))
    assert generated.task_count == 4 and generated.provenance["knobs"]["high"] == 20
    assert cli([*auth, "tasks", "import", str(upload), "--map", "prompt"]) == 1
    assert "name=value" in capsys.readouterr().err


def test_models_and_protocols_are_registered_and_retired(world: dict[str, Any]) -> None:
    client = lab(world)
    model = client.models.register("teacher 2", "scripted", "feedback-teacher")
    assert model.id in {m.id for m in client.models.list()}
    assert client.models.retire(model.id).retired
    assert model.id not in {m.id for m in client.models.list()}
    with pytest.raises(DialabError) as refused:
        client.models.register("bad", "scripted", "no-such-policy")
    assert "location" in refused.value.problems
    protocol = client.protocols.create("Two turns", max_turns=2)
    assert protocol.mode == "didactic" and protocol.templates
    assert not client.protocols.retire(protocol.id, retired=False).retired


def test_an_annotator_submits_labels_from_another_tool(world: dict[str, Any]) -> None:
    client = lab(world, "annotator")
    (queue,) = client.labels.queues()
    (item,) = client.labels.items(queue.id)
    with pytest.raises(DialabError) as refused:
        client.labels.submit(item.id, [Answer(question="nope", value=1)])
    assert "answers.0" in refused.value.problems
    done = client.labels.submit(item.id, [])  # this queue's schema asks nothing
    assert done.status == "done" and client.labels.items(queue.id, status="done") == [done]


def test_runs_are_compared_with_the_pages_paired_method(world: dict[str, Any]) -> None:
    first, second = world["first"].pk, world["second"].pk
    comparison = lab(world).runs.compare([first, second], baseline=first, by_seed=False)
    baseline, other = comparison.lines
    assert comparison.baseline == baseline.key and baseline.runs == [first]
    assert other.gaps[0].value == pytest.approx(-1.0) and other.gaps[0].tasks == 3
    table = comparison.to_pandas()
    assert set(table["key"]) == {baseline.key, other.key}
    assert table[table.key == other.key]["gap"].iloc[0] == pytest.approx(-1.0)
