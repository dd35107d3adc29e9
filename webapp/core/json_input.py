"""JSON typed into a form: one error message for every field that reads it, naming where the
text stops being JSON ("Enter a valid JSON." alone sends a person hunting through the box)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms


def invalid_json_message(error: json.JSONDecodeError) -> str:
    """E.g. "Not valid JSON at line 3, column 7: Expecting ',' delimiter." """
    return f"Not valid JSON at line {error.lineno}, column {error.colno}: {error.msg}."


def parse_json_input(text: str, *, loads: Callable[[str], Any] = json.loads) -> Any:
    """``loads(text)``, or a ValidationError saying at which line and column it fails."""
    try:
        return loads(text)
    except json.JSONDecodeError as error:
        raise forms.ValidationError(invalid_json_message(error), code="invalid") from None


class JSONInputField(forms.JSONField):
    """Django's ``forms.JSONField``, whose refusal of text that is not JSON says where."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip() and not self.disabled:
            parse_json_input(value, loads=lambda text: json.loads(text, cls=self.decoder))
        return super().to_python(value)
