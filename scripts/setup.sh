#!/usr/bin/env bash
# Create .venv and install Dialab into it (idempotent: skipped when pyproject.toml is unchanged).
# Usage: scripts/setup.sh [EXTRAS]   e.g. scripts/setup.sh dev,serve
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${1:-serve}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Dialab needs Python 3.11 or newer ($python is $("$python" --version 2>&1))." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> Creating .venv"
  "$python" -m venv .venv
fi

stamp=".venv/.dialab-installed-$extras-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> Installing Dialab and its dependencies ($extras)"
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet --editable ".[$extras]"
  rm -f .venv/.dialab-installed-*
  touch "$stamp"
fi
