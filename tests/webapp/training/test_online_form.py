"""The online SML launch form: what it refuses, and the runs it freezes."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from models_gpu.spec.training_run import TrainingRunConfig
from tests.factories import ProtocolFactory
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


def online_data(world: dict[str, Any], **changes: Any) -> dict[str, Any]:
    data = {
        "name": "", "base_model": world["base"].pk, "task_set": world["task_set"].pk,
        "protocol": world["protocol"].pk, "teacher": world["teacher"].pk,
        "single_turn_baseline": "on",
        "eval_task_set": world["held_out"].pk, "eval_protocol": world["protocol"].pk,
        "eval_teacher": world["teacher"].pk, "eval_samples": 1,
        "group_size": 4, "tasks_per_step": 1, "horizon": 2, "gamma": 0.7, "beta": 0.0,
        "clip_epsilon": 0.2, "temperature": 1.0, "max_new_tokens": 8, "store_share": 0.1,
        "eval_every": 0, "rollout_backend": "transformers",
        "learning_rate": 0.0001, "epochs": 1, "max_steps": 2, "max_length": 512,
        "warmup_ratio": 0.0, "weight_decay": 0.0, "lr_scheduler": "constant",
        "finetuning": "full", "lora_r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "seed": 0,
        "save_steps": 1, "keep_checkpoints": 2, "logging_steps": 1, "device": "cpu",
        "precision": "float32",
    }  # fmt: skip
    return {**data, **changes}


def test_the_form_refuses_what_cannot_run_and_launches_nothing(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    url = reverse("training_online_create")
    assert researcher_client.get(url).status_code == 200
    refused = researcher_client.post(url, online_data(world, teacher="", group_size=1))
    errors = refused.context["form"].errors
    assert "needs a teacher" in errors["teacher"][0]
    assert "greater than or equal to 2" in errors["group_size"][0]
    single = ProtocolFactory(name="one turn", mode="single_turn", max_turns=1)
    not_offered = researcher_client.post(url, online_data(world, protocol=single.pk))
    assert "protocol" in not_offered.context["form"].errors
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()


def test_a_launch_freezes_the_online_run_and_its_single_turn_sibling(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    launched = researcher_client.post(reverse("training_online_create"), online_data(world))
    assert launched.status_code == 302
    run, sibling = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk")
    config, sibling_config = (TrainingRunConfig.from_json(r.config) for r in (run, sibling))
    assert config.is_online and config.dataset is None
    assert config.online and (config.online.group_size, config.online.horizon) == (4, 2)
    assert config.rollouts and config.rollouts.task_set.id == world["task_set"].pk
    assert sibling_config.online and (
        sibling_config.online.group_size,
        sibling_config.online.horizon,
    ) == (8, 1)
    assert sibling_config.training == config.training
    page = researcher_client.get(launched.url).content.decode()
    assert "online SML (multi-turn GRPO)" in page
    assert "Rollouts kept</dt>" in page and "10% of each step's dialogues" in page
    assert (
        "single-turn RL"
        in researcher_client.get(reverse("training_run_detail", args=[sibling.pk])).content.decode()
    )


@pytest.mark.parametrize(
    ("share", "said"),
    [
        ("0.25", "25% of each step's dialogues · <a href="),
        ("0", 'none <span class="muted">(this run keeps no step\'s dialogues'),
    ],
)
def test_the_run_page_says_plainly_which_rollouts_it_keeps(
    researcher_client: Any, world: dict[str, Any], share: str, said: str
) -> None:
    """It said "Stored rollouts: the run's dialogues · 0 of every step's"."""
    launched = researcher_client.post(
        reverse("training_online_create"), online_data(world, store_share=share)
    )
    page = researcher_client.get(launched.url).content.decode()
    kept = page.split('id="stored-rollouts">')[1].split("</dd>")[0]
    assert said in kept
    assert "every step" not in page and ("kept so far" in kept) == (share != "0")


def test_the_form_keeps_a_share_of_each_step_by_default(researcher_client: Any) -> None:
    form = researcher_client.get(reverse("training_online_create")).context["form"]
    assert form["store_share"].initial == 0.25


def test_the_demo_miniature_keeps_rollouts_to_read() -> None:
    from models_gpu.spec.miniature import MINIATURE_ONLINE

    assert MINIATURE_ONLINE.store_share == 0.25


def test_without_the_baseline_one_run_is_launched(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    data = online_data(world)
    del data["single_turn_baseline"]
    researcher_client.post(reverse("training_online_create"), data)
    assert Run.objects.filter(kind=Run.Kind.TRAIN).count() == 1


def test_a_priming_selection_chains_a_priming_stage_before_grpo(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    url = reverse("training_online_create")
    selection = f"run={world['source'].pk}&outcome=solved"
    prefilled = researcher_client.get(f"{url}?{selection}&page=2").context["form"]
    assert prefilled["priming_selection"].value() == selection, "from the transcript list's link"

    nothing = researcher_client.post(
        url, online_data(world, priming_selection="outcome=solved&q=x")
    )
    assert "nothing to train on" in nothing.context["form"].errors["priming_selection"][0]
    assert not Run.objects.filter(kind=Run.Kind.TRAIN).exists()

    data = online_data(
        world, priming_selection=f"?{selection}", priming_method="sft", priming_epochs=2,
        priming_learning_rate=0.001,
    )  # fmt: skip
    launched = researcher_client.post(url, data)
    assert launched.status_code == 302
    run, sibling = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk")
    config = TrainingRunConfig.from_json(run.config)
    assert config.priming is not None and config.dataset is not None
    assert (config.priming.method, config.priming.epochs, config.priming.learning_rate) == (
        "sft", 2, 0.001,
    )  # fmt: skip
    assert config.priming.max_steps == 0 and config.priming.seed == config.training.seed
    assert config.dataset.dialogues == 2, "the two solved dialogues, frozen"
    assert TrainingRunConfig.from_json(sibling.config).priming == config.priming, "same priming"
    assert run.name.startswith("sft + online SML")
    page = researcher_client.get(launched.url).content.decode()
    assert "Priming stage" in page and "stage 1 of 2: priming (sft)" in page


def test_priming_left_empty_takes_the_default_method_and_settings(
    researcher_client: Any, world: dict[str, Any]
) -> None:
    selection = f"run={world['source'].pk}"
    researcher_client.post(
        reverse("training_online_create"), online_data(world, priming_selection=selection)
    )
    run = Run.objects.filter(kind=Run.Kind.TRAIN).order_by("pk").first()
    config = TrainingRunConfig.from_json(run.config)
    assert config.priming is not None and config.priming.method == "qpriming"
    assert config.dataset is not None and config.dataset.dialogues == 3
