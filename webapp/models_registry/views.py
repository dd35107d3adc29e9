from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.core.permissions import researcher_required
from webapp.models_registry.forms import ModelSpecForm
from webapp.models_registry.models import ModelSpec


@researcher_required
def model_list(request: HttpRequest) -> HttpResponse:
    form = ModelSpecForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        form.save()
        return redirect("model_list")
    models = ModelSpec.objects.select_related("trained_by_run", "base_model")
    return render(request, "models_registry/model_list.html", {"models": models, "form": form})
