#!/usr/bin/env bash
# Regenerate the documentation's screenshots (docs/images/) from the browser tests, whose
# fixtures build the data each page shows: nothing is hand-kept. Run it after a change to a page
# the docs show, then commit docs/images/. Needs the test set-up (bash scripts/setup.sh
# dev,serve,cpu and Chromium); runs on the embedded defaults, about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

shots="test-artifacts/docs-screenshots"
rm -rf "$shots" && mkdir -p "$shots" docs/images

# The tests that take the pictures, and the pictures the docs use (a test's shot(page, name)).
tests=(
  "tests/e2e/test_first_path.py"
  "tests/e2e/test_experiments_browser.py::test_three_seeds_of_base_and_trained_compared_with_the_gaps_interval_and_test"
)
pictures=(3-run-finished 5-dialogue compare-base-and-trained-seeds)

env -u DATABASE_URL -u CELERY_BROKER_URL -u CACHE_URL \
    DIALAB_DATA_DIR="test-artifacts/data-docs-screenshots" \
    DIALAB_SCREENSHOTS="$shots" \
    DIALAB_TEST_REQUIRE=chromium \
    .venv/bin/python -m pytest -q -p no:cacheprovider "${tests[@]}"

for name in "${pictures[@]}"; do
  cp "$shots/$name.png" "docs/images/$name.png"
  echo "docs/images/$name.png"
done
