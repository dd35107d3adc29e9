"""What the client raises when the server refuses a request."""

from __future__ import annotations

from typing import Any


class DialabError(RuntimeError):
    """The server refused a request: ``status`` is its HTTP status, ``detail`` its reason, and
    ``problems`` what a refused write says of each field (as the page's form would)."""

    def __init__(self, status: int, detail: Any, problems: dict[str, list[str]] | None = None):
        self.status = status
        self.detail = detail
        self.problems = problems or {}
        said = "; ".join(f"{field}: {' '.join(why)}" for field, why in self.problems.items())
        super().__init__(f"{status}: {detail}" + (f" ({said})" if said else ""))
