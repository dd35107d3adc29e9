"""The fork pages: the panel on a dialogue page, launching a fork, the family tree, two
branches side by side, the replay of a list from turn t, and a fork run against its parents."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.factories import ProtocolFactory, TaskFactory, TaskSetFactory, TeacherFactory, frozen_run
from tests.transcript_builders import attempt, feedback
from tests.webapp.forks.builders import stored
from webapp.forks import services
from webapp.forks.comparison import counterfactual_comparison
from webapp.forks.selectors import fork_pairs
from webapp.metrics.partial import BatchInPlay
from webapp.runs.models import Run

pytestmark = pytest.mark.django_db


@pytest.fixture
def family() -> dict[str, Any]:
    """A parent of two wrong attempts, and two forks of it after its first reply."""
    task_set = TaskSetFactory()
    task = TaskFactory(task_set=task_set)
    teacher, other_teacher = TeacherFactory(name="Ada"), TeacherFactory(name="Grace")
    protocol = ProtocolFactory(max_turns=3)
    parent_run = frozen_run(name="parents", task_set=task_set, teacher=teacher, protocol=protocol)
    fork_run = frozen_run(name="forks", task_set=task_set, teacher=other_teacher, protocol=protocol)
    parent = stored(parent_run, task.pk, 0, [
        attempt("It is 4.", "4", False), feedback("Count again."), attempt("5", "5", False),
    ])  # fmt: skip
    kept = [attempt("It is 4.", "4", False)]
    fork = stored(fork_run, task.pk, 0, [
        *kept, feedback("<script>alert(1)</script> try 3"), attempt("3", "3", True),
    ], parent=parent, fork_turns=1)  # fmt: skip
    sibling = stored(fork_run, task.pk, 1, [
        attempt("It is 4.", "4", False), feedback("Hmm."), attempt("6", "6", False),
    ], parent=parent, fork_turns=1)  # fmt: skip
    return {"parent": parent, "fork": fork, "sibling": sibling, "teacher": other_teacher,
            "parent_run": parent_run, "fork_run": fork_run, "task_set": task_set}  # fmt: skip


def test_the_dialogue_page_loads_the_fork_panel_for_researchers(researcher_client, family) -> None:  # type: ignore[no-untyped-def]
    parent = family["parent"]
    page = researcher_client.get(reverse("dialogue_detail", args=[parent.pk])).content.decode()
    panel = reverse("fork_panel", args=[parent.pk])
    assert f'hx-get="{panel}"' in page and f'href="{panel}?after=0"' in page


def test_the_panel_shows_the_tree_from_the_root_and_preselects_the_turn(
    researcher_client, family
) -> None:  # type: ignore[no-untyped-def]
    url = reverse("fork_panel", args=[family["fork"].pk])
    fragment = researcher_client.get(url, headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<div id="fork-panel">') and "<html" not in fragment
    for dialogue in ("parent", "fork", "sibling"):
        assert f'id="branch-{family[dialogue].pk}"' in fragment
    # The fork point is the parent's message as every page numbers it, linked to it there.
    parent_message = reverse("dialogue_detail", args=[family["parent"].pk]) + "#message-1"
    assert "teacher Grace" in fragment
    assert (
        f'forked after <a class="message-ref" href="{parent_message}">turn 1 · message #1</a>'
        in fragment
    )
    compare = reverse("fork_compare")
    assert f"{compare}?a={family['fork'].pk}&amp;b={family['sibling'].pk}" in fragment

    page = researcher_client.get(reverse("fork_panel", args=[family["parent"].pk]) + "?after=0")
    assert '<option value="0" selected>after Student · turn 1 · message #1: It is 4.</option>' in (
        page.content.decode()
    )


def test_forking_one_dialogue_launches_a_run_of_one_fork(researcher_client, family) -> None:  # type: ignore[no-untyped-def]
    parent, parent_run = family["parent"], family["parent_run"]
    response = researcher_client.post(
        reverse("fork_panel", args=[parent.pk]),
        {"after": "1", "student": parent_run.student_id, "teacher": family["teacher"].pk,
         "protocol": parent_run.protocol_id},
    )  # fmt: skip
    run = Run.objects.latest("pk")
    assert response.url == reverse("run_detail", args=[run.pk])
    assert run.frozen_config.forks.parents == ((parent.pk, 2),) and run.progress_total == 1
    assert run.name == f"Fork of #{parent.pk} after #2: Grace"
    page = researcher_client.get(response.url).content.decode()
    assert reverse("fork_run_comparison", args=[run.pk]) in page


def test_a_refused_fork_says_why_on_the_form(researcher_client, family) -> None:  # type: ignore[no-untyped-def]
    parent, parent_run = family["parent"], family["parent_run"]
    short = ProtocolFactory(max_turns=1)
    response = researcher_client.post(
        reverse("fork_panel", args=[parent.pk]),
        {"after": "1", "student": parent_run.student_id, "teacher": family["teacher"].pk,
         "protocol": short.pk},
    )  # fmt: skip
    assert response.status_code == 200
    assert "its first 2 turns the next turn would be turn 2, past the" in response.content.decode()


def test_annotators_cannot_fork(annotator_client, family) -> None:  # type: ignore[no-untyped-def]
    url = reverse("fork_panel", args=[family["parent"].pk])
    assert annotator_client.get(url).status_code == 403


def test_branches_side_by_side_share_the_kept_turns_once_and_escape_model_text(
    researcher_client, family
) -> None:  # type: ignore[no-untyped-def]
    fork, sibling = family["fork"], family["sibling"]
    url = f"{reverse('fork_compare')}?a={fork.pk}&b={sibling.pk}"
    page = researcher_client.get(url).content.decode()
    assert "<script>alert(1)" not in page
    assert page.count("It is 4.") == 1  # the shared reply, once
    shared, continuation = page.split('id="shared-turns"')[1].split('id="round-1"')
    assert "It is 4." in shared and "Count again" not in page
    assert "Hmm." in continuation and "try 3" in continuation
    parent_page = researcher_client.get(
        f"{reverse('fork_compare')}?a={family['parent'].pk}&b={fork.pk}"
    ).content.decode()
    assert "Count again" in parent_page and 'id="not-related"' not in parent_page


def test_replay_from_turn_t_takes_the_list_filter(researcher_client, family) -> None:  # type: ignore[no-untyped-def]
    parent_run = family["parent_run"]
    task = TaskFactory(task_set=family["task_set"])
    stored(parent_run, task.pk, 0, [attempt("3", "3", True)])  # solved at once: skipped
    url = reverse("fork_counterfactual_create")
    form = researcher_client.get(f"{url}?run={parent_run.pk}&page=1").content.decode()
    assert "2 transcripts of" in form and f'value="run={parent_run.pk}"' in form

    response = researcher_client.post(
        url, {"after_round": "1", "teacher": family["teacher"].pk, "filter": f"run={parent_run.pk}"}
    )
    run = Run.objects.latest("pk")
    assert response.url == reverse("run_detail", args=[run.pk])
    assert run.frozen_config.forks.parents == ((family["parent"].pk, 1),)
    assert run.student_id == parent_run.student_id and run.protocol_id == parent_run.protocol_id
    page = researcher_client.get(response.url).content.decode()
    assert "1 fork replay from turn 1. Skipped: 1 solved by that turn." in page

    list_page = researcher_client.get(f"{reverse('dialogue_list')}?run={parent_run.pk}")
    assert f"{url}?run={parent_run.pk}" in list_page.content.decode()


def ten_pairs() -> Run:
    """Ten unsolved parents; their forks after turn 1 solve six at turn 2."""
    task_set = TaskSetFactory()
    protocol = ProtocolFactory(max_turns=3)
    teacher = TeacherFactory()
    parents = frozen_run(name="parents", task_set=task_set, teacher=teacher, protocol=protocol)
    forks = frozen_run(name="forks", task_set=task_set, teacher=teacher, protocol=protocol)
    pairs = []
    for i in range(10):
        task = TaskFactory(task_set=task_set)
        parent = stored(parents, task.pk, 0, [
            attempt("4", "4", False), feedback("No."), attempt("5", "5", False),
            feedback("No."), attempt("6", "6", False),
        ])  # fmt: skip
        last = attempt("3", "3", True) if i < 6 else attempt("7", "7", False)
        stored(forks, task.pk, 0, [attempt("4", "4", False), feedback("Yes?"), last],
               parent=parent, fork_turns=1)  # fmt: skip
        pairs.append((parent.pk, 1))
    config = forks.frozen_config
    from dataclasses import replace

    from models_gpu.spec.run import ForkSpec

    forked = replace(config, forks=ForkSpec(tuple(pairs)))
    Run.objects.filter(pk=forks.pk).update(config=forked.to_json(), status=Run.Status.SUCCEEDED)
    return Run.objects.get(pk=forks.pk)


def test_the_comparison_pairs_forks_with_parents(researcher_client) -> None:  # type: ignore[no-untyped-def]
    run = ten_pairs()
    comparison = counterfactual_comparison(fork_pairs(run=run), max_turns=3)
    assert comparison is not None and comparison.pairs == 10 and comparison.from_turn == 1
    first, second, third = comparison.turns
    assert (first.turn, first.gap.value, first.gap.p_value) == (1, 0.0, None)
    assert not first.gap.informative, "no discordant pair at turn 1: no information"
    assert second.parent_accuracy == 0.0 and second.fork_accuracy == pytest.approx(0.6)
    assert second.gap.points == pytest.approx(60.0)
    assert (second.parent_only, second.fork_only) == (0, 6)
    # Six discordant pairs, all one way: McNemar's exact two-sided p is 2 * 0.5**6 = 0.03125;
    # the sign-flip test estimates it from 9,999 random flips (fixed seed).
    assert second.gap.p_value == pytest.approx(2 * 0.5**6, abs=0.006)
    assert second.gap.low >= 0.2 and second.gap.high <= 0.9
    assert third.gap.points == pytest.approx(60.0)

    page = researcher_client.get(reverse("fork_run_comparison", args=[run.pk])).content.decode()
    assert "10 pairs, from turn 1 (the fork point) to 3." in page
    assert "+60.0" in page and 'id="partial"' not in page and "no information" in page


def test_the_comparison_counts_the_batches_of_forks_that_finished(researcher_client) -> None:  # type: ignore[no-untyped-def]
    """While forks play, the ones stored by the batch in play (the quick solves) wait for their
    batch: 7 forks of a finished batch count, the 3 of the batch in play do not."""
    run = ten_pairs()
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.RUNNING,
        progress_total=12,
        batch_in_play=BatchInPlay(round=2, going=2, ended=3).to_json(),
    )
    page = researcher_client.get(reverse("fork_run_comparison", args=[run.pk])).content.decode()
    assert "Partial: over 7 of 12 dialogues (the batches that finished)" in page
    assert "7 pairs" in page
    plain = frozen_run()
    assert researcher_client.get(reverse("fork_run_comparison", args=[plain.pk])).status_code == 404
    assert services.MAX_FORKS == 2000
