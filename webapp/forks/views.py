"""Fork pages: fork one dialogue (and its family tree), two branches side by side, replay a
filtered list from turn t with another teacher, and a fork run against its parents.

Researchers only: forking launches runs, and a family tree links dialogues of any run. The
dialogue page and the transcript list reach these pages by link (and the dialogue page loads
the fork panel with htmx), so the transcripts app never imports this one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render

from models_gpu.spec.run import RunConfigError
from webapp.accounts.requests import SignedInRequest
from webapp.core.permissions import researcher_required
from webapp.dialogues import search
from webapp.dialogues.models import Dialogue
from webapp.forks import selectors, services
from webapp.forks.comparison import counterfactual_comparison
from webapp.forks.forms import CounterfactualForm, ForkForm
from webapp.runs import selectors as run_selectors
from webapp.runs.models import Protocol, Run
from webapp.runs.services import protocol_spec
from webapp.transcripts import selectors as dialogue_selectors
from webapp.transcripts.forms import DialogueFilterForm


def _add_problems(form: forms.Form, error: RunConfigError) -> None:
    for problem in error.problems:
        form.add_error(problem.field if problem.field in form.fields else None, problem.message)


def _carried_roles(played: selectors.PlayedWith, protocol: Protocol) -> dict[str, Any]:
    """The user simulator and judge the parent was played with, where the chosen protocol
    calls them."""
    spec = protocol_spec(protocol)
    return {
        "user_simulator": played.user_simulator if spec.mode == "sharded" else None,
        "judge": played.judge if spec.asks_judge else None,
    }


def _requested_turn(request: HttpRequest, points: list[services.ForkPoint]) -> int | None:
    """``?after=<turn index>`` when it is a fork point, else the last fork point."""
    indexes = [point.index for point in points]
    after = request.GET.get("after", "")
    if after.isdigit() and int(after) in indexes:
        return int(after)
    return indexes[-1] if indexes else None


@researcher_required
def fork_panel(request: SignedInRequest, pk: int) -> HttpResponse:
    """A dialogue's fork form and family tree: a page of its own, and (``request.htmx``) the
    panel the dialogue page loads. POST launches a run of one fork."""
    dialogue = get_object_or_404(
        Dialogue.objects.defer("search_document").select_related(
            "run", "run__student", "run__teacher", "run__protocol", "task"
        ),
        pk=pk,
    )
    turns = list(dialogue.turns.all())
    # Under what the dialogue was played: its run's configuration, or an online training run's
    # rollouts' (a rollout forks like any dialogue, into an evaluation of the training tasks).
    played = selectors.played_with(dialogue.run)
    points = services.fork_points(
        turns=turns, max_turns=played.config.protocol.max_turns, dialogue_id=dialogue.pk
    )
    initial = {
        "after": _requested_turn(request, points),
        "student": played.student.pk if played.student else None,
        "teacher": played.teacher.pk if played.teacher else None,
        "protocol": played.protocol.pk if played.protocol else None,
    }
    form = ForkForm(request.POST or None, initial=initial, points=points)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        after = data["after"]
        teacher_name = data["teacher"].name if data["teacher"] else "no teacher"
        try:
            fork_run = services.fork_run_create(
                name=data["name"] or f"Fork of #{dialogue.pk} after #{after + 1}: {teacher_name}",
                parents=[(dialogue, after + 1)],
                student=data["student"],
                teacher=data["teacher"],
                **_carried_roles(played, data["protocol"]),
                protocol=data["protocol"],
                seed=played.config.seed,
                created_by=request.user,
            )
        except RunConfigError as error:
            _add_problems(form, error)
        else:
            return redirect("run_detail", pk=fork_run.pk)
    tree = selectors.branch_tree(dialogue) if selectors.has_branches(dialogue) else None
    context = {
        "dialogue": dialogue,
        "form": form,
        "points": points,
        "tree": tree,
        "rollout_of": dialogue.run if played.rollouts else None,
    }
    if request.htmx and request.method == "GET":
        return render(request, "forks/fork_panel.html#panel", context)
    return render(request, "forks/fork_panel.html", context)


def _dialogue_id(request: HttpRequest, name: str) -> int:
    value = request.GET.get(name, "")
    if not value.isdigit():
        raise Http404(f"Say which dialogues: ?a=<id>&b=<id> ({name} is missing).")
    return int(value)


@researcher_required
def branch_compare(request: HttpRequest) -> HttpResponse:
    """Two branches of one dialogue side by side: the turns they share once, then each one's
    own continuation, turn by turn."""
    try:
        comparison = selectors.branch_comparison(
            a_id=_dialogue_id(request, "a"), b_id=_dialogue_id(request, "b")
        )
    except Dialogue.DoesNotExist:
        raise Http404("No such dialogue.") from None
    return render(request, "forks/branch_compare.html", {"comparison": comparison})


def _filtered_dialogue_ids(request: SignedInRequest, query: QueryDict) -> tuple[list[int], bool]:
    """The transcript list's dialogues for this filter, in its order: the first
    ``MAX_FORKS``, and whether there were more."""
    filters = DialogueFilterForm.from_query(query, reader=request.user).filters()
    dialogues = dialogue_selectors.dialogue_list(
        filters=filters, reader=request.user, searches_turns=search.searches_turns(filters.search)
    )
    ids = list(dialogues.values_list("pk", flat=True)[: services.MAX_FORKS + 1])
    return ids[: services.MAX_FORKS], len(ids) > services.MAX_FORKS


def _shared(values: list[Any], what: str, form: forms.Form) -> Any:
    """The one value the parents' runs share, or an error on ``what`` asking to choose one."""
    distinct = set(values)
    if len(distinct) == 1:
        return distinct.pop()
    form.add_error(what, f"The dialogues come from runs with different {what}s: choose one.")
    return None


@researcher_required
def counterfactual_create(request: SignedInRequest) -> HttpResponse:
    """Replay the transcript list's dialogues (its filter, as its GET parameters) from turn t
    with another teacher: one run, a fork of each dialogue that turn t left unsolved."""
    source = QueryDict(request.POST.get("filter", "")) if request.method == "POST" else request.GET
    query = source.copy()
    query.pop("page", None)
    query.pop("csrfmiddlewaretoken", None)
    form = CounterfactualForm(request.POST or None, initial={"filter": query.urlencode()})
    ids, more = _filtered_dialogue_ids(request, query)
    context: dict[str, Any] = {
        "form": form,
        "query": query.urlencode(),
        "matched": len(ids),
        "more": more,
        "limit": services.MAX_FORKS,
    }
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        t = data["after_round"]
        dialogues = selectors.dialogues_with_turns(ids)
        parents, skipped = services.counterfactual_parents(dialogues, t)
        context["skipped"] = skipped
        runs = Run.objects.select_related("student", "teacher", "protocol").in_bulk(
            {dialogue.run_id for dialogue, _ in parents}
        )
        # What each parent was played with (an online training run's rollouts: its rollouts').
        played = {run_id: selectors.played_with(run) for run_id, run in runs.items()}
        student = data["student"] or _shared(
            [played[d.run_id].student for d, _ in parents], "student", form
        )
        protocol = data["protocol"] or _shared(
            [played[d.run_id].protocol for d, _ in parents], "protocol", form
        )
        if not parents:
            form.add_error(None, f"No dialogue of this list can be replayed from turn {t}.")
        elif not form.errors:
            most_common = played[Counter(d.run_id for d, _ in parents).most_common(1)[0][0]]
            try:
                run = services.fork_run_create(
                    name=data["name"]
                    or f"Replay from turn {t} with {data['teacher'].name} ({len(parents)} forks)",
                    parents=parents,
                    student=student,
                    teacher=data["teacher"],
                    **_carried_roles(most_common, protocol),
                    protocol=protocol,
                    seed=most_common.config.seed,
                    created_by=request.user,
                )
            except RunConfigError as error:
                _add_problems(form, error)
            else:
                messages.info(request, _launch_note(len(parents), t, skipped, more))
                return redirect("run_detail", pk=run.pk)
    return render(request, "forks/counterfactual_form.html", context)


def _launch_note(forks: int, t: int, skipped: dict[str, int], more: bool) -> str:
    """What the replay left out, said on the run page it lands on."""
    note = f"{forks} fork{'s' if forks != 1 else ''} replay from turn {t}."
    if skipped:
        reasons = ", ".join(f"{count} {reason}" for reason, count in skipped.items())
        note += f" Skipped: {reasons}."
    if more:
        note += f" The list had more than {services.MAX_FORKS} dialogues: only its first ones."
    return note


@researcher_required
def fork_run_comparison(request: HttpRequest, run_id: int) -> HttpResponse:
    """A fork run against its parents, turn by turn from the fork point; while the run plays
    (or after it stopped early) over the forks its figures count (``webapp.metrics.partial``):
    the forks that ended first are the quickly solved ones."""
    run = get_object_or_404(Run.objects.filter(kind=Run.Kind.EVAL), pk=run_id)
    config = run.frozen_config
    if config.forks is None:
        raise Http404("This run is not a run of forks.")
    counting = run_selectors.countings(runs=[run])[run.pk]
    pairs = [pair for pair in selectors.fork_pairs(run=run) if counting.counts_whole(pair.fork_id)]
    comparison = counterfactual_comparison(pairs, max_turns=config.protocol.max_turns)
    context = {
        "run": run,
        "comparison": comparison,
        "counted": counting.counted,
        "total": len(config.forks.parents),
    }
    return render(request, "forks/run_comparison.html", context)
