"""Reading the model registry."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from models_gpu.spec.backends import backend_problems
from webapp.core.redaction import REDACTED, redact
from webapp.models_registry.credentials import credential_problems, secret_param_names
from webapp.models_registry.models import ModelSpec


def parameter_items(params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Generation parameters as (name, value) pairs to read (``temperature``, ``0.7``), by name;
    a value that looks like a secret is shown as [redacted] (rows stored before credentials
    were refused may hold one)."""
    secrets = set(secret_param_names(params))
    return [
        (name, REDACTED if name in secrets else _value_text(value))
        for name, value in sorted(params.items())
    ]


def _value_text(value: Any) -> str:
    # Strings bare, anything else as the JSON the form takes (true, null, [1, 2]).
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return redact(text)


@dataclass(frozen=True)
class LineageRow:
    model: ModelSpec
    depth: int  # 0 for a model trained by nobody here, 1 for one trained from it, ...

    @property
    def indent(self) -> int:
        """The depth the page indents by (deeper trees stop indenting at 4)."""
        return min(self.depth, 4)

    @property
    def parameters(self) -> list[tuple[str, str]]:
        return parameter_items(self.model.generation_params)

    @property
    def problems(self) -> list[str]:
        return model_problems(self.model)


def model_problems(model: ModelSpec) -> list[str]:
    """Why ``model`` cannot be used now, or nothing: what the services would refuse to save
    (a credential, parameters its backend refuses, a key variable the operator's rule does not
    allow) in a row stored before the rule, or under a rule tightened since. A run with it is
    refused at launch, and the worker refuses it too. Redacted, like every value the page shows."""
    problems = list(
        credential_problems(
            location=model.location, generation_params=model.generation_params
        ).values()
    )
    problems += [
        problem.message
        for problem in backend_problems(model.backend, model.location, model.generation_params)
    ]
    return [redact(problem) for problem in problems]


def model_choices() -> QuerySet[ModelSpec]:
    """The models a run may be launched with: every model not retired."""
    return ModelSpec.objects.filter(retired=False)


def model_lineage_rows(*, include_retired: bool = False) -> list[LineageRow]:
    """Every model (not retired, unless ``include_retired``), each trained model right under the
    model it was trained from (by name within a level): the registry as a lineage tree, in one
    query. A model whose base is not listed starts a tree of its own."""
    rows_query = ModelSpec.objects.select_related("trained_by_run", "base_model")
    if not include_retired:
        rows_query = rows_query.filter(retired=False)
    models = list(rows_query)
    children: dict[int | None, list[ModelSpec]] = defaultdict(list)
    known = {model.pk for model in models}
    for model in models:
        parent = model.base_model_id if model.base_model_id in known else None
        children[parent].append(model)
    rows: list[LineageRow] = []

    def visit(parent: int | None, depth: int) -> None:
        for model in sorted(children[parent], key=lambda m: m.name):
            rows.append(LineageRow(model, depth))
            visit(model.pk, depth + 1)

    visit(None, 0)
    return rows


def retired_model_count() -> int:
    return ModelSpec.objects.filter(retired=True).count()
