"""Serve the partial plotly.js bundle that setup installs, under a name that carries its hash.

Third-party JavaScript is installed at setup, never committed. ``scripts/setup.sh`` installs
``plotly.js-basic-dist-min`` (scatter, bar and pie: every chart Dialab draws, at a quarter of the
size of the full plotly.min.js) into ``settings.DIALAB_VENDOR_DIR`` as
``plotly-basic.<first 12 hex digits of its SHA-256>.min.js``, next to its precompressed ``.gz``
(and, where the ``brotli`` module is installed, ``.br``) siblings. This finder exposes exactly
those files under ``vendor/``. WhiteNoise, serving from the finders, sends the sibling the
browser accepts, and marks the file immutable because its name changes with its content
(``settings.WHITENOISE_IMMUTABLE_FILE_TEST``). Pages get the URL from ``{% plotly_js_url %}``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.staticfiles.finders import BaseFinder
from django.core.checks import CheckMessage, Error
from django.core.files.storage import FileSystemStorage

STATIC_DIR = "vendor"
BUNDLE_NAME = re.compile(r"^plotly-basic\.(?P<hash>[0-9a-f]{12})\.min\.js$")
COMPRESSED_SUFFIXES = (".gz", ".br")
SETUP_HINT = "run scripts/setup.sh, which fetches it from npm's registry"


def vendor_dir() -> Path:
    """Where setup installs third-party JavaScript (``settings.DIALAB_VENDOR_DIR``)."""
    return Path(settings.DIALAB_VENDOR_DIR)


def _bundles(directory: Path) -> list[Path]:
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        Path(entry.path) for entry in entries if entry.is_file() and BUNDLE_NAME.match(entry.name)
    )


def plotly_js_path() -> Path | None:
    """The installed plotly.js bundle, the file pages load (``None`` unless exactly one is
    installed: the system check says what is wrong)."""
    found = _bundles(vendor_dir())
    return found[0] if len(found) == 1 else None


def plotly_static_path() -> str | None:
    """The bundle's static path, ``vendor/plotly-basic.<hash>.min.js``."""
    path = plotly_js_path()
    return f"{STATIC_DIR}/{path.name}" if path is not None else None


def bundle_files() -> dict[str, Path]:
    """The bundle and its compressed siblings, by file name."""
    path = plotly_js_path()
    if path is None:
        return {}
    files = {path.name: path}
    for suffix in COMPRESSED_SUFFIXES:
        sibling = path.with_name(path.name + suffix)
        if sibling.is_file():
            files[sibling.name] = sibling
    return files


class PlotlyJsFinder(BaseFinder):
    """Finds ``vendor/plotly-basic.<hash>.min.js`` (and ``.gz``/``.br``) in the vendor dir. The
    directory is looked at on each call: a re-run of setup needs no restart under autorefresh."""

    def check(self, **kwargs: Any) -> list[CheckMessage]:
        directory = vendor_dir()
        found = _bundles(directory)
        if not found:
            return [
                Error(
                    f"The plotly.js bundle is not installed: no plotly-basic.<hash>.min.js in "
                    f"{directory}.",
                    hint=f"To install it, {SETUP_HINT}.",
                    id="dialab.E001",
                )
            ]
        if len(found) > 1:
            names = ", ".join(path.name for path in found)
            return [
                Error(
                    f"Several plotly.js bundles are installed in {directory}: {names}.",
                    hint=f"Remove the directory and {SETUP_HINT}.",
                    id="dialab.E002",
                )
            ]
        path = found[0]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        match = BUNDLE_NAME.match(path.name)
        if match is None or match["hash"] != digest:
            return [
                Error(
                    f"{path} does not match its name: its content hashes to {digest}.",
                    hint=f"Remove the directory and {SETUP_HINT}.",
                    id="dialab.E003",
                )
            ]
        return []

    # Not found, Django's finders answer [] whatever find_all says (the stubs say None).
    def find(  # type: ignore[override]
        self, path: str, find_all: bool = False, **kwargs: Any
    ) -> str | list[str]:
        directory, _, name = path.partition("/")
        found = bundle_files().get(name) if directory == STATIC_DIR else None
        if found is None:
            # [] either way, as Django's finders answer: finders.find() would return [""] for "".
            return []
        return [str(found)] if find_all else str(found)

    def list(self, ignore_patterns: Any) -> Any:
        # WhiteNoise (serving from the finders) and collectstatic see the compressed siblings
        # too: WhiteNoise serves a sibling only when it was listed with the bundle.
        files = bundle_files()
        if files:
            storage = FileSystemStorage(location=str(vendor_dir()))
            storage.prefix = STATIC_DIR  # type: ignore[attr-defined]
            for name in files:
                yield name, storage
