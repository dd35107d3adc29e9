"""Form widgets for the transcript filters that write their HTML in Python.

Django renders every widget, and every ``<option>`` of a select, through the template engine
(one template include each); the transcript list's filter form has fifteen fields and some
hundred options, which took longer to render than the 50 rows of the page (measured with
``benchmarks/transcripts.py``). These write the markup of Django's templates from the same
widget context (so ids, attributes and ``selected`` are Django's), escaping every value with
``html.escape`` as Django's ``escape`` does. Choices are flat (no option groups).
"""

from __future__ import annotations

from html import escape
from typing import Any

from django import forms
from django.utils.safestring import SafeString, mark_safe


def _attrs(attrs: dict[str, Any]) -> str:
    """As ``django.forms.utils.flatatt``: ``True`` writes the name alone, ``False`` and
    ``None`` nothing."""
    return "".join(
        f" {name}" if value is True else f' {name}="{escape(str(value))}"'
        for name, value in attrs.items()
        if value is not False and value is not None
    )


class QuickInputMixin:
    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        widget = self.get_context(name, value, attrs)["widget"]  # type: ignore[attr-defined]
        shown = widget["value"]
        value_attr = f' value="{escape(str(shown))}"' if shown is not None else ""
        return mark_safe(
            f'<input type="{escape(widget["type"])}" name="{escape(widget["name"])}"'
            f"{value_attr}{_attrs(widget['attrs'])}>"
        )


class QuickTextInput(QuickInputMixin, forms.TextInput):
    pass


class QuickNumberInput(QuickInputMixin, forms.NumberInput):
    pass


class QuickSelect(forms.Select):
    """A single select written straight from its choices: Django's ``optgroups`` builds a
    context dictionary per option, which cost more than writing the options themselves."""

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        chosen = self.format_value(value)  # strings, as Django compares them
        selected = False
        options = []
        for option_value, label in self.choices:
            text = str(option_value if option_value is not None else "")
            mark = not selected and text in chosen  # a single select marks its first match
            selected = selected or mark
            options.append(
                f'<option value="{escape(text)}"{" selected" if mark else ""}>'
                f"{escape(str(label))}</option>"
            )
        final_attrs = self.build_attrs(self.attrs, attrs)
        return mark_safe(
            f'<select name="{escape(name)}"{_attrs(final_attrs)}>{"".join(options)}</select>'
        )
