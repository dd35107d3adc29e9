#!/usr/bin/env bash
# Set Dialab up on this machine and start it with the embedded defaults (SQLite and a file-based
# broker under ./data), two real Celery workers (interactive work, batch runs), and a demo
# project. Ctrl-C stops everything.
# While the pages are up, the house model trains in the background (a few minutes on a laptop
# CPU; log: data/house-model.log), its demo run is launched when it is ready, and the miniature
# SML reproduction's tasks are added for the home page's button.
set -euo pipefail
cd "$(dirname "$0")/.."

port="${PORT:-8000}"
bash scripts/setup.sh serve,cpu
py=.venv/bin/python

echo "==> Preparing the database"
$py manage.py migrate --no-input -v 0
$py manage.py demo_project

mkdir -p data
# One worker per queue (webapp.core.queues), so a playground reply or a "Try it" never waits
# behind an evaluation or a training run.
echo "==> Starting the Celery workers (logs: data/worker-interactive.log, data/worker.log)"
$py -m celery -A webapp worker --queues=interactive --pool=solo --concurrency=1 \
  --prefetch-multiplier=1 --loglevel=INFO --hostname="interactive@%h" >data/worker-interactive.log 2>&1 &
interactive_pid=$!
$py -m celery -A webapp worker --queues=gpu --pool=solo --concurrency=1 \
  --prefetch-multiplier=1 --loglevel=INFO --hostname="batch@%h" >data/worker.log 2>&1 &
worker_pid=$!
echo "==> Training the house model in the background (log: data/house-model.log)"
($py manage.py build_house_model && $py manage.py demo_project && $py manage.py sml_miniature --demo-task-sets) >data/house-model.log 2>&1 &
house_pid=$!
trap 'pkill -P "$house_pid" 2>/dev/null; kill "$interactive_pid" "$worker_pid" "$house_pid" 2>/dev/null; wait 2>/dev/null || true' EXIT INT TERM

cat <<MSG

  Dialab is starting at  http://127.0.0.1:$port/
  Log in as              demo / dialab-demo

MSG
$py manage.py runserver --noreload "127.0.0.1:$port"
