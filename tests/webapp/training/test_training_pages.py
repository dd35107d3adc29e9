"""Training from the browser's side: the launch form, its refusals, the training run page with
its curves, the trained model's lineage and the base-versus-trained evaluation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.webapp.training.launch_form import form_data
from webapp.experiments.comparison import compare
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.training.models import DatasetSnapshot

pytestmark = pytest.mark.django_db


def test_the_transcript_list_offers_training_on_its_filter(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    html = researcher_client.get(reverse("dialogue_list"), {"outcome": "solved"}).content.decode()
    assert re.search(r'id="train-these" href="/training/new/\?outcome=solved&amp;page=1"', html)
    assert re.search(
        r'id="prime-these" href="/training/online/new/\?outcome=solved&amp;page=1"', html
    )
    form = researcher_client.get(reverse("training_create"), {"outcome": "solved", "page": 1})
    page = form.content.decode()
    assert "<strong>2</strong> dialogues (2 solved), 6 turns of which 4 by the student" in page
    assert 'value="outcome=solved"' in page  # the selection, without the list's page


def test_retired_models_and_protocols_are_not_offered(
    researcher_client: Any, world: dict[str, Any], tiny_model_dir: Path
) -> None:
    ModelSpec.objects.create(
        name="old base", backend="transformers", location=str(tiny_model_dir), retired=True
    )
    world["protocol"].retired = True
    world["protocol"].save()
    form = researcher_client.get(reverse("training_create"), {"outcome": "solved"}).context["form"]
    assert [m.name for m in form.fields["base_model"].queryset] == ["tiny"]
    assert world["protocol"] not in form.fields["eval_protocol"].queryset
    refused = researcher_client.post(
        reverse("training_create"), form_data(world, eval_protocol=world["protocol"].pk)
    )
    assert "eval_protocol" in refused.context["form"].errors


def test_an_empty_selection_and_bad_values_are_refused_on_the_form(
    researcher_client: Any, world: dict[str, Any], tmp_path: Path
) -> None:
    url = reverse("training_create")
    empty = researcher_client.post(url, form_data(world, selection="outcome=solved&turns=9"))
    assert "nothing to train on" in empty.content.decode()
    bad = researcher_client.post(url, form_data(world, learning_rate=0, max_length=4))
    assert bad.status_code == 200
    assert set(bad.context["form"].errors) >= {"learning_rate", "max_length"}
    gone = ModelSpec.objects.create(
        name="gone", backend="transformers", location=str(tmp_path / "nowhere")
    )
    missing = researcher_client.post(url, form_data(world, base_model=gone.pk))
    assert missing.context["form"].errors["base_model"] == [
        f"gone: {tmp_path / 'nowhere'} is not a directory here."
    ]
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()
    assert not DatasetSnapshot.objects.exists()  # the launch's transaction rolled back


def test_a_question_writer_is_frozen_with_a_q_priming_run_and_refused_for_another_method(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    url = reverse("training_create")
    form = researcher_client.get(url, {"outcome": "solved"}).content.decode()
    shown_for_qpriming = 'data-applies-when="id_method" data-applies-value="qpriming"><label'
    assert f'{shown_for_qpriming} for="id_question_writer"' in form
    writer = world["base"]  # any model that generates text may write the questions
    refused = researcher_client.post(url, form_data(world, question_writer=writer.pk))
    assert refused.context["form"].errors["question_writer"] == [
        "Only Q-priming writes questions: leave it empty."
    ]
    launched = researcher_client.post(
        url, form_data(world, method="qpriming", question_writer=writer.pk)
    )
    run = Run.objects.get(kind=Run.Kind.TRAIN)
    assert run.config["question_writer"]["id"] == writer.pk
    page = researcher_client.get(launched.url).content.decode()
    assert 'qpriming <span class="muted">· questions written by tiny (transformers)' in page


@pytest.mark.slow
def test_launch_train_and_read_the_run_page(researcher_client: Any, world: dict[str, Any]) -> None:
    from workers.evaluation import execute_evaluation
    from workers.training import execute_training

    launched = researcher_client.post(reverse("training_create"), form_data(world))
    run = Run.objects.get(kind=Run.Kind.TRAIN)
    assert launched.url == reverse("training_run_detail", args=[run.pk])
    assert researcher_client.get(reverse("run_detail", args=[run.pk])).url == launched.url
    waiting = researcher_client.get(launched.url).content.decode()
    assert "no training steps logged yet" in waiting and 'id="cancel-run"' in waiting

    execute_training(run.pk, worker="test", background_heartbeat=False)
    trained = ModelSpec.objects.get(trained_by_run=run)
    for evaluation in Run.objects.filter(kind=Run.Kind.EVAL).exclude(pk=world["source"].pk):
        execute_evaluation(evaluation.pk, worker="test", background_heartbeat=False)

    page = researcher_client.get(launched.url).content.decode()
    assert "step 2 / 2" in page and 'id="training-figure"' in page
    assert f'Trained model: <a href="/models/#model-{trained.pk}">' in page
    assert 'id="base-run"' in page and 'id="trained-run"' in page
    assert page.count("<tr><td>") == 2  # the difference table: after turns 1 and 2
    assert 'id="difference-method"' in page and "paired over the 1 task both evaluated" in page
    assert "Partial" not in page
    # The same two runs on the comparison page: the same method, the same numbers (before, this
    # page used Newcombe's unpaired interval and the comparison page the paired bootstrap).
    differences = researcher_client.get(launched.url).context["differences"]
    base_run = researcher_client.get(launched.url).context["base_run"]
    trained_run = researcher_client.get(launched.url).context["trained_run"]
    [line] = compare([base_run, trained_run], baseline_run_id=base_run.pk, by_seed=False).gaps
    assert [row.gap for row in differences] == line.gaps
    live = researcher_client.get(reverse("training_run_live", args=[run.pk]))
    assert live.status_code == 286  # training and both evaluations ended: polling stops

    models = researcher_client.get(reverse("model_list")).content.decode()
    assert f'<tr id="model-{trained.pk}">' in models
    assert 'class="lineage-depth-1"' in models and "from tiny, trained by" in models
