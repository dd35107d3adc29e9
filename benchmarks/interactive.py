"""Does a person at the keyboard wait behind batch work? Playground replies and "Try it"
verifications on the house model, with the machine idle and while a training run and an
evaluation play, on the demo's worker layout (one worker per queue, webapp.core.queues).

    .venv/bin/python benchmarks/interactive.py [--model data/models/house] [--replies 10]
        [--probes 10]

Into a throwaway data directory (SQLite and the file broker, as the demo; DATABASE_URL and
friends are ignored) it migrates, makes the demo project and registers ``--model`` as the house
model (build one first with ``manage.py build_house_model``), then starts the demo's two
workers, ``--queues=interactive`` and ``--queues=gpu``, each with the solo pool, as
``scripts/demo.sh`` does.

Measured, in each of two phases (idle: nothing else runs; loaded: the miniature's online SML
run, its single-turn sibling and the house model's demo evaluation are queued on the batch worker,
and the interactive timings start once one of them plays):

- a playground reply: the researcher is the teacher, the house model the student; from the run's
  launch (or the researcher's answer) to the student's next turn waiting in the page, through the
  interactive worker (the model loads in each job, as in the demo);
- "Try it": from the probe's creation to its verdict stored.

And the batch jobs' throughput loss from sharing the cores: the training run's steps a second
while the interactive timings run, against the same run's rate in a quiet window of equal length
right after. Peak memory of each worker process is reported too (the demo's budget). Medians and
95th percentiles print per phase; headline ``name: value`` lines last.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
POLL_SECONDS = 0.05
WAIT_LIMIT_SECONDS = 600
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=ROOT / "data" / "models" / "house")
    parser.add_argument("--replies", type=int, default=10, help="Playground replies per phase.")
    parser.add_argument("--probes", type=int, default=10, help="Try it verifications when idle.")
    parser.add_argument(
        "--windows", type=int, default=3, help="Quiet and shared windows, taken in turns."
    )
    parser.add_argument("--window-seconds", type=float, default=40.0)
    args = parser.parse_args()
    if not (args.model / "config.json").exists():
        sys.exit(f"No model at {args.model}: build one with `manage.py build_house_model`.")

    data = Path(tempfile.mkdtemp(prefix="dialab-interactive-"))
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"):
        os.environ.pop(name, None)
    os.environ.update(DIALAB_DATA_DIR=str(data), DJANGO_SETTINGS_MODULE="webapp.settings")
    workers: list[subprocess.Popen[bytes]] = []
    try:
        _prepare(data, args.model)
        workers = [_start_worker(data, "interactive"), _start_worker(data, "gpu")]
        _measure(args, workers)
    finally:
        for worker in workers:
            _stop(worker)
        shutil.rmtree(data, ignore_errors=True)


def _prepare(data: Path, model: Path) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("demo_project", "--no-run", verbosity=0)
    (data / "models").mkdir(exist_ok=True)
    (data / "models" / "house").symlink_to(model.resolve())
    call_command("build_house_model", verbosity=0)  # registers the model found there
    call_command("sml_miniature", "--demo-task-sets", verbosity=0)


def _start_worker(data: Path, queue: str) -> subprocess.Popen[bytes]:
    log = (data / f"worker-{queue}.log").open("wb")
    return subprocess.Popen(
        [
            sys.executable, "-m", "celery", "-A", "webapp", "worker", f"--queues={queue}",
            "--pool=solo", "--concurrency=1", "--prefetch-multiplier=1", "--without-gossip",
            "--without-mingle", "--loglevel=WARNING", f"--hostname={queue}-bench@%h",
        ],
        cwd=ROOT, env=os.environ.copy(), stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # its trainer child goes with it
    )  # fmt: skip


def _stop(worker: subprocess.Popen[bytes]) -> None:
    """A worker in the middle of a training run would finish it first: stop it and its
    children at once."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=60)


def _wait_for(what: str, found: Callable[[], object]) -> object:
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(POLL_SECONDS)
    raise SystemExit(f"gave up waiting for {what} after {WAIT_LIMIT_SECONDS} s")


def _playground_replies(count: int) -> list[float]:
    """Seconds from a launch or an answer to the model's next turn, ``count`` of them."""
    from webapp.accounts.models import User
    from webapp.dialogues.models import PendingTurn
    from webapp.models_registry.house import HOUSE_MODEL_NAME
    from webapp.models_registry.models import ModelSpec
    from webapp.people import services as people
    from webapp.people.playground import playground_start
    from webapp.runs.models import Protocol
    from webapp.tasks.models import Task

    user = User.objects.get(username="demo")
    house = ModelSpec.objects.get(name=HOUSE_MODEL_NAME)
    protocol = Protocol.objects.filter(mode=Protocol.Mode.DIDACTIC).order_by("pk").first()
    tasks = list(Task.objects.filter(task_set__name__icontains="arithmetic").order_by("pk")[:50])
    seconds: list[float] = []
    for task in tasks:
        started = time.perf_counter()
        run = playground_start(
            task=task, role="teacher", partner=house, protocol=protocol, user=user
        )  # type: ignore[arg-type]
        while len(seconds) < count:
            turn = _wait_for("the model's turn", partial(_next_turn, run.pk))
            seconds.append(time.perf_counter() - started)
            if not isinstance(turn, PendingTurn):
                break  # the dialogue ended (solved): the next task
            people.pending_claim(pending=turn, user=user)
            started = time.perf_counter()
            people.pending_answer(pending=turn, user=user, text="Not quite: check each step.")
        if len(seconds) >= count:
            return seconds
    return seconds


def _next_turn(run_id: int) -> object:
    """The person's turn the model left waiting, or the dialogue if it ended; else None."""
    from webapp.dialogues.models import Dialogue, PendingTurn

    open_turns = PendingTurn.objects.filter(run_id=run_id, status=PendingTurn.Status.OPEN)
    return open_turns.first() or Dialogue.objects.filter(run_id=run_id).first()


def _verdict(probe_id: int) -> bool:
    from webapp.tasks.models import VerifierProbe

    return VerifierProbe.objects.filter(pk=probe_id, verdict__isnull=False).exists()


def _training_stepped(run_id: int, steps: int) -> bool:
    from webapp.runs.models import Run

    running = Run.objects.filter(pk=run_id, status=Run.Status.RUNNING)
    return running.filter(progress_done__gte=steps).exists()


def _probes(count: int) -> list[float]:
    from webapp.tasks.models import Task
    from webapp.tasks.services import probe_create

    task = Task.objects.filter(task_set__name__icontains="arithmetic").order_by("pk").first()
    assert task is not None
    seconds = []
    for attempt in range(count):
        started = time.perf_counter()
        probe = probe_create(task=task, response=f"The answer is {attempt}.", user=None)
        _wait_for("a verdict", partial(_verdict, probe.pk))
        seconds.append(time.perf_counter() - started)
    return seconds


def _launch_batch_work() -> int:
    """The miniature's training runs and the house model's evaluation; the training run's id."""
    from webapp.accounts.models import User
    from webapp.demo.services import demo_house_run_create, demo_miniature_launch

    training = demo_miniature_launch(user=User.objects.get(username="demo"))
    demo_house_run_create()
    return training.pk


@dataclass
class Window:
    """A stretch of the training run: how many steps it made in how long, and whether it was
    training all along (a window in which it ended does not count)."""

    seconds: float
    steps: int
    valid: bool


def _window(training: int, seconds: float, work: Callable[[], None] | None) -> Window:
    """Watch the training run for ``seconds``, doing ``work`` over and over meanwhile."""
    from webapp.runs.models import Run

    def state() -> tuple[float, int, bool]:
        run = Run.objects.get(pk=training)
        return time.perf_counter(), run.progress_done, run.status == Run.Status.RUNNING

    start, first_step, running = state()
    while time.perf_counter() - start < seconds:
        if work is None:
            time.sleep(POLL_SECONDS)
        else:
            work()
    end, last_step, still_running = state()
    return Window(end - start, last_step - first_step, running and still_running)


def _steps_per_second(windows: list[Window]) -> float | None:
    counted = [window for window in windows if window.valid]
    if not counted:
        return None
    return sum(window.steps for window in counted) / sum(window.seconds for window in counted)


class PeakMemory(threading.Thread):
    """The most resident memory a worker and its descendants held at once (a training run's
    trainer is a child process of its worker), sampled twice a second."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_bytes = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            self.peak_bytes = max(self.peak_bytes, _tree_rss_bytes(self.pid))

    @property
    def peak_mb(self) -> float:
        return self.peak_bytes / 2**20


def _tree_rss_bytes(pid: int) -> int:
    """Resident bytes of ``pid`` and every process below it (parents read from /proc)."""
    rss: dict[int, int] = {}
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            resident = int((entry / "statm").read_text().split()[1]) * PAGE_BYTES
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended meanwhile
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state
        children.setdefault(parent, []).append(int(entry.name))
        rss[int(entry.name)] = resident
    total, stack = 0, [pid]
    while stack:
        process = stack.pop()
        total += rss.get(process, 0)
        stack.extend(children.get(process, ()))
    return total


def _p95(values: list[float]) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def _report(label: str, values: list[float]) -> None:
    print(
        f"{label}: n={len(values)} median {statistics.median(values):.2f} s, "
        f"p95 {_p95(values):.2f} s, max {max(values):.2f} s",
        flush=True,
    )


def _measure(args: argparse.Namespace, workers: list[subprocess.Popen[bytes]]) -> None:
    memories = [PeakMemory(worker.pid) for worker in workers]
    for memory in memories:
        memory.start()
    _playground_replies(1)  # warm-up: the first job imports torch and the model's code
    idle_replies = _playground_replies(args.replies)
    idle_probes = _probes(args.probes)
    _report("idle, playground reply", idle_replies)
    _report("idle, Try it", idle_probes)

    training = _launch_batch_work()
    _wait_for("the training run's second step", partial(_training_stepped, training, 2))
    loaded_replies: list[float] = []
    loaded_probes: list[float] = []

    def people_at_work() -> None:
        loaded_replies.extend(_playground_replies(2))
        loaded_probes.extend(_probes(2))

    # Quiet and shared windows alternate, so both see the same stretch of training.
    quiet: list[Window] = []
    shared: list[Window] = []
    for _ in range(args.windows):
        quiet.append(_window(training, args.window_seconds, None))
        shared.append(_window(training, args.window_seconds, people_at_work))
    for memory in memories:
        memory.stopped.set()

    _report("loaded, playground reply", loaded_replies)
    _report("loaded, Try it", loaded_probes)
    quiet_rate, shared_rate = _steps_per_second(quiet), _steps_per_second(shared)
    counted = sum(window.valid for window in quiet + shared)
    print(
        f"training steps/s: {shared_rate} while people worked, {quiet_rate} in the quiet "
        f"windows ({counted} of {2 * args.windows} windows counted: the run trained all "
        "through them)"
    )
    print(
        f"peak memory (with child processes): interactive worker {memories[0].peak_mb:.0f} MB, "
        f"batch worker {memories[1].peak_mb:.0f} MB"
    )
    print(f"playground_reply_p95_idle_s: {_p95(idle_replies):.2f}")
    print(f"playground_reply_p95_loaded_s: {_p95(loaded_replies):.2f}")
    reply_ratio = _p95(loaded_replies) / _p95(idle_replies)
    print(f"playground_reply_p95_loaded_over_idle: {reply_ratio:.2f}")
    print(f"try_it_p95_idle_s: {_p95(idle_probes):.2f}")
    print(f"try_it_p95_loaded_s: {_p95(loaded_probes):.2f}")
    print(f"try_it_p95_loaded_over_idle: {_p95(loaded_probes) / _p95(idle_probes):.2f}")
    if quiet_rate and shared_rate is not None:
        print(f"training_throughput_shared_over_quiet: {shared_rate / quiet_rate:.2f}")


if __name__ == "__main__":
    main()
