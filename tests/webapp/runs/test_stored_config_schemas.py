"""Every configuration schema a database can hold reads on every page that reads
configurations, and ``Run.dialogue_config`` says under which RunConfig any run's dialogues
were played. Before, a stored rollout of an online training run (TrainingRunConfig, schema 4)
answered 500 on its fork panel: ``run configuration schema 4; this code reads 1``."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from models_gpu.spec.run import RunConfig
from models_gpu.spec.training_run import TrainingRunConfig
from tests.config_builders import TRAINING_KINDS, StoredKind, TrainingWorld, stored_training_run
from tests.factories import TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback, store
from tests.webapp.forks.builders import stored
from webapp.dialogues.models import Dialogue
from webapp.runs.models import Run
from webapp.training.selectors import training_dialogues

pytestmark = pytest.mark.django_db

ERROR_TEXT = ("Something went wrong", "this code reads", "Traceback")


def _get(client: Client, url: str, **headers: str) -> str:
    response = client.get(url, follow=True, headers=headers)
    # 286: a live fragment of a finished run, which stops the polling.
    assert response.status_code in (200, 286), url
    body = (
        b"".join(response.streaming_content) if response.streaming else response.content
    ).decode()
    for text in ERROR_TEXT:
        assert text not in body, f"{url}: {text}"
    return body


# --- The accessor --------------------------------------------------------------------------


def test_an_evaluation_s_dialogues_were_played_under_its_own_configuration() -> None:
    run = frozen_run()
    assert run.dialogue_config == RunConfig.from_json(run.config) == run.frozen_config


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda kind: kind.id)
def test_a_training_run_s_dialogues_were_played_under_its_rollouts(kind: StoredKind) -> None:
    run = stored_training_run(kind).run
    config = TrainingRunConfig.from_json(run.config)
    assert run.training_config == config
    if kind.online:
        assert run.dialogue_config == config.rollouts is not None
        assert run.dialogue_config.student == config.base, "the base model plays the rollouts"
    else:
        assert run.dialogue_config is None, "offline training plays no dialogues"
    with pytest.raises(ValueError, match="is a training run: its configuration is a training"):
        run.frozen_config  # noqa: B018


# --- Every page that reads configurations, for every stored schema --------------------------


def _training_pages(world: TrainingWorld) -> list[str]:
    run = world.run
    compare = (
        f"{reverse('run_compare')}?runs={world.base_evaluation.pk}"
        f"&runs={world.trained_evaluation.pk}"
    )
    pages = [
        reverse("run_detail", args=[run.pk]),  # redirects to the training page
        reverse("training_run_detail", args=[run.pk]),
        reverse("training_run_live", args=[run.pk]),
        reverse("run_list"),
        compare,
        reverse("transfer_matrix"),
        f"{reverse('dialogue_list')}?run={run.pk}",
        f"{reverse('dialogue_export_download')}?run={run.pk}&format=jsonl",
        f"{reverse('training_create')}?run={run.pk}",
        f"{reverse('fork_counterfactual_create')}?run={run.pk}",
    ]
    for rollout in world.rollouts:
        pages += [
            reverse("dialogue_detail", args=[rollout.pk]),
            reverse("fork_panel", args=[rollout.pk]),
        ]
    if len(world.rollouts) == 2:
        first, second = world.rollouts
        pages.append(f"{reverse('fork_compare')}?a={first.pk}&b={second.pk}")
        pages.append(
            f"{reverse('dialogue_compare')}?task={first.task_id}&left_run={run.pk}"
            f"&right_run={run.pk}&sample=0&right_sample=1"
        )
    return pages


@pytest.mark.parametrize("kind", TRAINING_KINDS, ids=lambda kind: kind.id)
def test_every_page_reads_every_stored_training_schema(
    researcher_client: Client, kind: StoredKind
) -> None:
    world = stored_training_run(kind)
    for url in _training_pages(world):
        _get(researcher_client, url)
    for rollout in world.rollouts:
        panel = reverse("fork_panel", args=[rollout.pk])
        fragment = _get(researcher_client, panel, HX_REQUEST="true")
        assert 'id="fork-form"' in fragment or "<form" in fragment


def test_every_page_reads_a_stored_evaluation_configuration(researcher_client: Client) -> None:
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set)
    run = frozen_run(task_set=task_set, teacher=TeacherFactory(), status=Run.Status.SUCCEEDED)
    store(
        run,
        task.pk,
        0,
        "a_late",
        [attempt("4", "4", False), feedback("No."), attempt("5", "5", False)],
    )
    assert run.config["schema"] == 1 and "forks" not in run.config, "as schema 1 stored it"
    dialogue = run.dialogues.get()
    for url in [
        reverse("run_detail", args=[run.pk]),
        reverse("run_live", args=[run.pk]),
        reverse("run_metrics_csv", args=[run.pk]),
        reverse("run_list"),
        f"{reverse('run_compare')}?runs={run.pk}",
        reverse("dialogue_detail", args=[dialogue.pk]),
        reverse("fork_panel", args=[dialogue.pk]),
        f"{reverse('dialogue_list')}?run={run.pk}",
        f"{reverse('dialogue_export_download')}?run={run.pk}&format=jsonl",
    ]:
        _get(researcher_client, url)


# --- Forking a stored rollout -------------------------------------------------------------------


@pytest.fixture
def online() -> TrainingWorld:
    return stored_training_run(StoredKind(4, online=True))


def test_a_rollout_s_fork_panel_starts_from_its_rollouts_configuration(
    researcher_client: Client, online: TrainingWorld
) -> None:
    rollout = online.rollouts[0]
    config = online.run.training_config
    assert config.rollouts is not None and config.rollouts.teacher is not None
    response = researcher_client.get(reverse("fork_panel", args=[rollout.pk]))
    initial = response.context["form"].initial
    assert initial["student"] == config.base.id, "the base model played the rollouts' student"
    assert initial["teacher"] == config.rollouts.teacher.id == online.teacher.pk
    assert initial["protocol"] == config.rollouts.protocol.id
    html = response.content.decode()
    assert 'id="rollout-note"' in html and "training step 1" in html


def test_a_rollout_forks_into_an_evaluation_of_its_training_tasks(
    researcher_client: Client, online: TrainingWorld
) -> None:
    rollout = online.rollouts[0]
    rollouts = online.run.training_config.rollouts
    assert rollouts is not None
    response = researcher_client.post(
        reverse("fork_panel", args=[rollout.pk]),
        {
            "after": "0",
            "student": online.run.student_id,
            "teacher": online.teacher.pk,
            "protocol": rollouts.protocol.id,
        },
    )
    fork_run = Run.objects.latest("pk")
    assert response.status_code == 302 and response.url == reverse("run_detail", args=[fork_run.pk])
    assert fork_run.kind == Run.Kind.EVAL
    assert fork_run.frozen_config.forks is not None
    assert fork_run.frozen_config.forks.parents == ((rollout.pk, 1),)
    assert fork_run.frozen_config.task_set.id == rollouts.task_set.id, "the training tasks"
    assert fork_run.frozen_config.seed == rollouts.seed
    _get(researcher_client, response.url)
    # Once the fork is stored, the family tree names the rollout's teacher, read from the
    # rollouts' configuration (the training run's own columns name no teacher).
    stored(fork_run, rollout.task_id, 0, [attempt("It is 4.", "4", False), feedback("Hm.")],
           parent=rollout, fork_turns=1)  # fmt: skip
    tree = _get(researcher_client, reverse("fork_panel", args=[rollout.pk]))
    rollout_node = tree.split(f'id="branch-{rollout.pk}"')[1].split("<ul>")[0]
    assert f"teacher {online.teacher.name}" in rollout_node


def test_a_rollout_s_page_names_the_roles_it_was_played_with(
    researcher_client: Client, online: TrainingWorld
) -> None:
    rollouts = online.run.training_config.rollouts
    assert rollouts is not None
    page = _get(researcher_client, reverse("dialogue_detail", args=[online.rollouts[0].pk]))
    roles = page.split('id="rollout-roles"')[1].split("</dd>")[0]
    assert f"teacher <strong>{online.teacher.name}</strong>" in roles
    assert rollouts.protocol.name in page.split('id="rollout-roles"')[0]
    assert 'id="training-step"' in page


def test_training_on_stored_rollouts_reads_their_rollouts_configuration(
    online: TrainingWorld,
) -> None:
    """ "Train on these" over a list of rollouts: each is read with the protocol it was played
    under (the rollouts')."""
    rows = list(training_dialogues(Dialogue.objects.filter(run=online.run)))
    assert [row.dialogue_id for row in rows] == [rollout.pk for rollout in online.rollouts]
    assert all(not row.sharded and len(row.turns) == 3 for row in rows)
