from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from models_gpu.spec.backends import BACKENDS, SCRIPTED_POLICIES
from models_gpu.spec.credentials import key_env_rule
from webapp.core.permissions import researcher_required
from webapp.models_registry.forms import MODEL_FIELDS, ModelSpecForm
from webapp.models_registry.models import ModelSpec
from webapp.models_registry.selectors import model_lineage_rows, retired_model_count
from webapp.models_registry.services import (
    model_spec_create,
    model_spec_set_retired,
    model_spec_update,
)


def _reference() -> dict[str, object]:
    """What each backend expects, shown under every model form, with the operator's rule on
    the variables that may hold a model's key."""
    return {
        "backends": BACKENDS,
        "scripted_policies": SCRIPTED_POLICIES,
        "key_env_rule": key_env_rule().describe(),
    }


def _saved(request: HttpRequest, form: ModelSpecForm, model: ModelSpec, verb: str) -> None:
    messages.success(request, f"{verb} {model}.")
    for warning in form.warnings:
        messages.warning(request, warning)


@researcher_required
def model_list(request: HttpRequest) -> HttpResponse:
    """The registry (retired models with ``?retired=1``) and the form that adds a model."""
    form = ModelSpecForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            model = model_spec_create(**form.model_fields())
        except ValidationError as error:  # the form checks the same; kept for a clear page
            form.add_error(None, error)
        else:
            _saved(request, form, model, "Added")
            return redirect("model_list")
    show_retired = request.GET.get("retired") == "1"
    context = {
        "rows": model_lineage_rows(include_retired=show_retired),
        "show_retired": show_retired,
        "retired_count": retired_model_count(),
        "form": form,
        **_reference(),
    }
    return render(request, "models_registry/model_list.html", context)


@researcher_required
def model_edit(request: HttpRequest, pk: int) -> HttpResponse:
    model = get_object_or_404(ModelSpec, pk=pk)
    form = ModelSpecForm(request.POST or None, instance=model)
    if request.method == "POST" and form.is_valid():
        try:
            model_spec_update(model=model, **form.model_fields())
        except ValidationError as error:
            form.add_error(None, error)
        else:
            _saved(request, form, model, "Saved")
            return redirect("model_list")
    context = {"form": form, "model": model, "editing": True, **_reference()}
    return render(request, "models_registry/model_form.html", context)


@researcher_required
def model_clone(request: HttpRequest, pk: int) -> HttpResponse:
    """The add form pre-filled with a model's settings, under a new name."""
    source = get_object_or_404(ModelSpec, pk=pk)
    copy = ModelSpec(**{name: getattr(source, name) for name in MODEL_FIELDS})
    copy.name = f"{source.name} (copy)"
    form = ModelSpecForm(request.POST or None, instance=copy)
    if request.method == "POST" and form.is_valid():
        try:
            model = model_spec_create(**form.model_fields())
        except ValidationError as error:
            form.add_error(None, error)
        else:
            _saved(request, form, model, "Added")
            return redirect("model_list")
    context = {"form": form, "model": source, "editing": False, **_reference()}
    return render(request, "models_registry/model_form.html", context)


@researcher_required
@require_POST
def model_retire(request: HttpRequest, pk: int) -> HttpResponse:
    """Retire (``retired=1``) or restore (``retired=0``) a model."""
    model = get_object_or_404(ModelSpec, pk=pk)
    retired = request.POST.get("retired") == "1"
    model_spec_set_retired(model=model, retired=retired)
    if retired:
        messages.success(request, f"Retired {model}: it is no longer offered when launching a run.")
        return redirect("model_list")
    messages.success(request, f"Restored {model}.")
    return redirect(f"{reverse('model_list')}?retired=1")
