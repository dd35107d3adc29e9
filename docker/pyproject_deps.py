"""Print what `pip install ".[EXTRAS]"` would install for Dialab, one requirement per line.

The images install their dependencies from pyproject.toml alone, before any source is copied, so
the heavy layer (torch above all) is rebuilt only when pyproject.toml changes, not on every code
edit. Dialab itself is not pip-installed: the code runs from /app (on PYTHONPATH), where
settings.BASE_DIR finds templates/ and static/ next to the packages.

Usage: python pyproject_deps.py pyproject.toml [EXTRA[,EXTRA...] ...]
"""

from __future__ import annotations

import sys
import tomllib


def requirements(pyproject_path: str, extras: list[str]) -> list[str]:
    with open(pyproject_path, "rb") as handle:
        project = tomllib.load(handle)["project"]
    optional = project.get("optional-dependencies", {})
    unknown = [extra for extra in extras if extra not in optional]
    if unknown:
        # A typo in a build argument must fail the build, not quietly drop torch.
        raise SystemExit(f"Unknown extra(s) {unknown}; pyproject.toml has {sorted(optional)}.")
    wanted = list(project.get("dependencies", []))
    for extra in extras:
        wanted.extend(optional[extra])
    return wanted


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    chosen = [extra.strip() for arg in sys.argv[2:] for extra in arg.split(",") if extra.strip()]
    print("\n".join(requirements(sys.argv[1], chosen)))
