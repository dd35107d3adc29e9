"""Reading the model registry."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from webapp.models_registry.models import ModelSpec


@dataclass(frozen=True)
class LineageRow:
    model: ModelSpec
    depth: int  # 0 for a model trained by nobody here, 1 for one trained from it, ...

    @property
    def indent(self) -> int:
        """The depth the page indents by (deeper trees stop indenting at 4)."""
        return min(self.depth, 4)


def model_lineage_rows() -> list[LineageRow]:
    """Every model, each trained model right under the model it was trained from (by name
    within a level): the registry as a lineage tree, in one query."""
    models = list(ModelSpec.objects.select_related("trained_by_run", "base_model"))
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
