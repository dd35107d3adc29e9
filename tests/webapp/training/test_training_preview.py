"""The launch form's preview: a worker tokenizes the selection with the base model's tokenizer
and shows each method's trained tokens, or why the chat template cannot express a method."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tests.models_gpu.training.test_encode import REWRITES_LAST
from tests.webapp.training.launch_form import form_data
from webapp.models_registry.models import ModelSpec
from webapp.runs.models import Run
from webapp.training.models import TrainingPreview
from workers.training import build_preview

pytestmark = pytest.mark.django_db


def preview_page(client: Any, data: dict[str, Any]) -> tuple[TrainingPreview, str]:
    """Ask for a preview, let the worker build it, and read the polled fragment."""
    asked = client.post(reverse("training_preview_create"), data)
    assert 'id="preview-waiting"' in asked.content.decode()
    preview = TrainingPreview.objects.latest("pk")
    build_preview(preview.pk, heartbeat=False)
    preview.refresh_from_db()
    assert preview.started_at is not None, "the worker says it took it"
    done = client.get(reverse("training_preview_detail", args=[preview.pk]))
    assert done.status_code == 286  # done: the form stops polling
    return preview, done.content.decode()


def test_the_preview_counts_tokens_and_marks_what_each_method_trains(
    researcher_client: Any,
    world: dict[str, Any],
) -> None:
    preview, html = preview_page(researcher_client, form_data(world))
    assert preview.result is not None and preview.result["dialogues"] == 2
    assert preview.result["trained_tokens"] > 0 and "2 dialogues: about" in html
    assert 'id="preview-sft" open' in html and "(chosen)" in html
    assert 'id="preview-critique"' in html and 'id="preview-qpriming"' in html
    # SFT trains the student's replies ("4" then "3"), not the teacher's "Too high."
    sft = html.split('id="preview-sft"')[1].split("</details>")[0]
    assert '<mark class="trained">4' in sft and '<mark class="trained">3' in sft
    assert '<mark class="trained">Too high.' not in sft
    critique = html.split('id="preview-critique"')[1].split("</details>")[0]
    assert '<mark class="trained">Too high.' in critique


def test_a_chat_template_that_cannot_express_the_layout_is_said_before_launch(
    researcher_client: Any,
    world: dict[str, Any],
    tmp_path: Path,
) -> None:
    from transformers import AutoTokenizer

    rewriting = tmp_path / "rewriting"
    shutil.copytree(world["base"].location, rewriting)
    tokenizer = AutoTokenizer.from_pretrained(rewriting)
    tokenizer.chat_template = REWRITES_LAST
    tokenizer.save_pretrained(rewriting)
    model = ModelSpec.objects.create(
        name="rewrites", backend="transformers", location=str(rewriting)
    )
    preview, html = preview_page(researcher_client, form_data(world, base_model=model.pk))
    assert preview.result is None
    assert "cannot express the sft layout" in preview.error
    assert 'id="preview-error"' in html
    # Launching that method anyway is refused on the form, with what the preview found.
    refused = researcher_client.post(
        reverse("training_create"), form_data(world, base_model=model.pk)
    )
    (error,) = refused.context["form"].errors["method"]
    assert error.startswith("The latest preview of rewrites found: ") and "sft layout" in error
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()


def test_a_preview_of_a_bad_form_says_what_to_fix(
    researcher_client: Any,
    world: dict[str, Any],
) -> None:
    html = researcher_client.post(
        reverse("training_preview_create"), form_data(world, selection="turns=9")
    ).content.decode()
    assert 'id="preview-refused"' in html and "nothing to train on" in html
    assert not TrainingPreview.objects.exists()
