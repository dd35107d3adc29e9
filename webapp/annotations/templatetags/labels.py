"""How a stored label value reads on a page: the words the labelling page uses."""

from __future__ import annotations

from typing import Any

from django import template

from webapp.annotations.agreement_selectors import display

register = template.Library()


@register.filter
def answer(value: Any) -> str:
    """A stored answer as the labelling page words it: ``yes``/``no`` for a yes/no question
    (stored as JSON true/false), choices joined by commas, ∅ for no answer."""
    if value is None:
        return "∅"
    if isinstance(value, list):
        return display(frozenset(str(choice) for choice in value))
    return display(value)
