"""Serve plotly.min.js from the installed plotly package as ``vendor/plotly.min.js``.

Third-party JavaScript is installed with the Python packages, never committed; this finder
exposes the one file we need instead of the package's whole data folder.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import Error
from django.core.files.storage import FileSystemStorage

PLOTLY_STATIC_PATH = "vendor/plotly.min.js"


def _plotly_package_data() -> Path | None:
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "package_data"


def plotly_js_path() -> Path | None:
    """The installed plotly.min.js (``None`` without the plotly package)."""
    package_data = _plotly_package_data()
    return package_data / "plotly.min.js" if package_data else None


class PlotlyJsFinder(BaseFinder):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        package_data = _plotly_package_data()
        self.source = plotly_js_path()
        self.storage = FileSystemStorage(location=str(package_data)) if package_data else None

    def check(self, **kwargs: Any) -> list[Error]:
        if self.source is None or not self.source.exists():
            return [Error("plotly.min.js not found: is the plotly package installed?")]
        return []

    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str]:
        if path != PLOTLY_STATIC_PATH or self.source is None:
            return [] if find_all else ""
        return [str(self.source)] if find_all else str(self.source)

    def list(self, ignore_patterns: Any) -> Any:
        if self.storage is not None and self.source is not None and self.source.exists():
            # collectstatic copies <storage root>/plotly.min.js; expose it under vendor/.
            self.storage.prefix = "vendor"  # type: ignore[attr-defined]
            yield "plotly.min.js", self.storage
