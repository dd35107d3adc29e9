from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from models_gpu.spec.backends import BACKENDS, SCRIPTED_POLICIES
from webapp.core.permissions import researcher_required
from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.selectors import model_lineage_rows
from webapp.models_registry.services import model_spec_create


@researcher_required
def model_list(request: HttpRequest) -> HttpResponse:
    form = ModelSpecForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            model = model_spec_create(
                name=data["name"],
                backend=data["backend"],
                location=data["location"],
                generation_params=data["generation_params"],
                description=data["description"],
            )
        except ValidationError as error:  # the form checks the same; kept for a clear page
            form.add_error(None, error)
        else:
            messages.success(request, f"Added {model}.")
            for warning in form.warnings:
                messages.warning(request, warning)
            return redirect("model_list")
    context = {
        "rows": model_lineage_rows(),
        "form": form,
        "backends": {name: info for name, info in BACKENDS.items() if info.available},
        "scripted_policies": SCRIPTED_POLICIES,
    }
    return render(request, "models_registry/model_list.html", context)
