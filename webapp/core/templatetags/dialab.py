"""Small template filters shared by Dialab's pages. Output stays auto-escaped."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for showing structured data (a turn's private context) to people."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


@register.filter
def words(identifier: str) -> str:
    """``student_generations`` → ``student generations``."""
    return str(identifier).replace("_", " ")
