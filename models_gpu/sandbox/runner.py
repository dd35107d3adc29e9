"""The parent side of the sandbox: start the candidate's and the tests' processes, read the verdict.

For each verification, two processes start side by side in sandboxes of their own
(``isolation.py``) and run ``harness.py``: one runs the candidate's code, the other the tests,
joined by a socket that carries requests and plain-data answers. Only the tests' process writes
the report, on a pipe only it holds; see ``harness.py`` for why that makes a forged pass
impossible. Whatever the candidate does, ``run_tests`` returns a ``SandboxReport``; it raises
only when nothing can be run safely (``SandboxUnavailable``) or for a broken installation.

Thread-safe and fork-safe in a threaded parent (Django, Celery): no ``preexec_fn``; each process
limits itself before any untrusted code runs.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from models_gpu.sandbox import harness
from models_gpu.sandbox.isolation import Isolation, Sandboxed, current_isolation

HARNESS = Path(harness.__file__)
HARNESS_MODULE = "dialab_sandbox_harness"
# Run in each sandboxed process: argv is [code directory, role].
_BOOTSTRAP = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    f"from {HARNESS_MODULE} import main; main(sys.argv[1])"
)
_TAIL_CHARS = 1500
_REPORT_LIMIT_BYTES = 4_000_000
_START_UP_SECONDS = 2.0  # two interpreters and two sandboxes, on a busy machine

Outcome = Literal[
    "passed",
    "tests_failed",
    "load_error",
    "exited_early",
    "timeout",
    "memory_limit",
    "file_size_limit",
    "open_files_limit",
    "crashed",
]


@dataclass(frozen=True)
class SandboxLimits:
    """Bounds on one sandboxed run, applied to each of its two processes.

    timeout_seconds: wall clock; both sandboxes are killed after it. CPU time is capped at the
        same number of seconds (rounded up).
    memory_mb: address space of each process (RLIMIT_AS), interpreter included (about 20 MB).
    file_size_mb: largest file a process may write (RLIMIT_FSIZE), stdout and stderr included;
        also the size of each sandbox's private tmpfs.
    open_files: RLIMIT_NOFILE.
    """

    timeout_seconds: float = 10.0
    memory_mb: int = 512
    file_size_mb: int = 16
    open_files: int = 64

    def __post_init__(self) -> None:
        if not 0 < self.timeout_seconds <= 600:
            raise ValueError("timeout_seconds must be in (0, 600]")
        if not 64 <= self.memory_mb <= 65536:
            raise ValueError("memory_mb must be in [64, 65536]")
        if not 1 <= self.file_size_mb <= 1024:
            raise ValueError("file_size_mb must be in [1, 1024]")
        if not 16 <= self.open_files <= 4096:
            raise ValueError("open_files must be in [16, 4096]")


@dataclass(frozen=True)
class TestOutcome:
    name: str
    passed: bool
    error: str | None


@dataclass(frozen=True)
class SandboxReport:
    """What happened. ``outcome == "passed"`` only when every test ran and passed.

    ``isolation`` is the mode that ran it: "bubblewrap", or "none" when ``DIALAB_SANDBOX=none``
    ran the code without a sandbox (such a verdict is marked unsandboxed wherever it is shown).
    """

    outcome: Outcome
    tests: tuple[TestOutcome, ...] = ()
    load_error: str | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    exit_status: int | None = None
    wall_seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())
    isolation: str = "bubblewrap"

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass(frozen=True)
class _Finished:
    report: dict[str, Any] | None
    timed_out: bool
    candidate_status: int | None  # None while it was still running when the tests finished


def run_tests(
    candidate: str,
    tests: str,
    *,
    entry_point: str | None = None,
    task_code: str = "",
    limits: SandboxLimits | None = None,
) -> SandboxReport:
    """Run ``candidate`` then ``tests`` (asserts, ``test_*`` functions, or HumanEval ``check``).

    ``task_code`` is the task's own code that the candidate was given (a HumanEval prompt's
    imports and helper functions): it runs on the tests' side, so the tests call the task's
    helpers, not the candidate's versions of them (``harness.py`` says how names are resolved).
    """
    limits = limits or SandboxLimits()
    where = current_isolation()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dialab-sandbox-") as private:
        outputs = Path(private)
        finished = _run_pair(where, outputs, candidate, tests, entry_point, task_code, limits)
        stdout_tail = _tail(outputs / "candidate.stdout")
        stderr_tail = _tail(outputs / "candidate.stderr")
        tests_stderr = _tail(outputs / "tests.stderr")
    wall = time.perf_counter() - started
    return replace(
        _summarise(finished, stdout_tail, stderr_tail, tests_stderr, wall), isolation=where.mode
    )


def _run_pair(
    where: Isolation,
    outputs: Path,
    candidate: str,
    tests: str,
    entry_point: str | None,
    task_code: str,
    limits: SandboxLimits,
) -> _Finished:
    process_limits = {
        "cpu_seconds": max(1, math.ceil(limits.timeout_seconds)),
        "memory_mb": limits.memory_mb,
        "file_size_mb": limits.file_size_mb,
        "open_files": limits.open_files,
    }
    deadline = time.monotonic() + limits.timeout_seconds + _START_UP_SECONDS
    started: list[Sandboxed] = []
    try:
        tests_end, candidate_end = socket.socketpair()
        with tests_end, candidate_end:
            channel_fds = {"candidate": candidate_end.fileno(), "tests": tests_end.fileno()}
            candidate_side = _start(where, "candidate", candidate_end, outputs, limits, stdout=None)
            started.append(candidate_side)
            tests_side = _start(where, "tests", tests_end, outputs, limits, stdout=subprocess.PIPE)
            started.append(tests_side)
        # The parent's ends are closed now: each side sees the other's exit as end of file.
        _send_job(
            candidate_side.process,
            {
                "candidate": candidate,
                "channel_fd": channel_fds["candidate"],
                "limits": process_limits,
            },
        )
        tests_job = {
            "tests": tests,
            "entry_point": entry_point,
            # Read, never run, on the tests' side: its import statements say which real modules
            # the tests see under the names the candidate imported.
            "candidate_source": candidate,
            "task_code": task_code,
            "channel_fd": channel_fds["tests"],
            "limits": process_limits,
        }
        report, timed_out = _read_report(tests_side.process, tests_job, deadline)
        # Its exit status matters only when the tests say it ended early (it says why).
        ended_early = report is not None and report.get("candidate_failure") is not None
        candidate_status = _status_if_ended(candidate_side.process, wait=ended_early)
        return _Finished(report, timed_out, candidate_status)
    finally:
        for sandbox in started:
            sandbox.stop()


def _start(
    where: Isolation,
    role: str,
    channel: socket.socket,
    outputs: Path,
    limits: SandboxLimits,
    *,
    stdout: int | None,
) -> Sandboxed:
    """One side: its stdout (unless piped to us) and stderr go to files we read the tails of."""
    home = outputs / f"{role}-home"
    with contextlib.ExitStack() as files:
        error_file = files.enter_context(open(outputs / f"{role}.stderr", "wb"))
        output_file = (
            stdout
            if stdout is not None
            else files.enter_context(open(outputs / f"{role}.stdout", "wb"))
        )
        home.mkdir()
        return where.start(
            code=_BOOTSTRAP,
            code_dir=_compiled_harness(where.python),
            arguments=[role],
            pass_fds=(channel.fileno(),),
            stdout=output_file,
            stderr=error_file,
            tmpfs_mb=limits.file_size_mb,
            home=home,
        )


@functools.cache
def _compiled_harness(python: str) -> Path:
    """A directory holding the harness and its bytecode for ``python``, shared by the processes
    of this user on this machine.

    Compiling the harness in each sandboxed process cost about 20 ms of the 40 ms it takes to
    start; a ``.pyc`` written here by the same interpreter is read instead (``-B`` only stops
    writing). Readable by the sandbox's user, writable only by us. Named after the harness and
    the interpreter, so that worker processes that come and go (a pool child per job) reuse one
    directory instead of leaving one each; a directory of that name that we do not own is never
    trusted: we build a private one instead.
    """
    digest = hashlib.sha256(HARNESS.read_bytes() + python.encode()).hexdigest()[:16]
    shared = Path(tempfile.gettempdir()) / f"dialab-harness-{os.geteuid()}-{digest}"
    if _ours_and_closed(shared):
        return shared
    private = Path(tempfile.mkdtemp(prefix="dialab-harness-"))
    source = private / f"{HARNESS_MODULE}.py"
    shutil.copyfile(HARNESS, source)
    compile_source = "import py_compile, sys; py_compile.compile(sys.argv[1], doraise=True)"
    subprocess.run(
        [python, "-I", "-c", compile_source, str(source)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    for path in [private, *private.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    with contextlib.suppress(OSError):  # another process got there first: use theirs
        os.rename(private, shared)
        return shared
    if _ours_and_closed(shared):
        shutil.rmtree(private, ignore_errors=True)
        return shared
    atexit.register(shutil.rmtree, private, True)
    return private


def _ours_and_closed(directory: Path) -> bool:
    """Whether ``directory`` and everything in it is ours and writable by no one else."""
    try:
        paths = [directory, *directory.rglob("*")]
        for path in paths:
            status = path.lstat()
            if status.st_uid != os.geteuid() or status.st_mode & 0o022 or path.is_symlink():
                return False
    except OSError:
        return False
    return (directory / f"{HARNESS_MODULE}.py").is_file()


def _send_job(process: subprocess.Popen[bytes], job: dict[str, Any]) -> None:
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError):  # it died at start: the tests will say so
        process.stdin.write(json.dumps(job).encode("utf-8"))
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()


def _read_report(
    process: subprocess.Popen[bytes], job: dict[str, Any], deadline: float
) -> tuple[dict[str, Any] | None, bool]:
    """The tests' report, or None; and whether the deadline passed first."""
    try:
        output, _ = process.communicate(
            json.dumps(job).encode("utf-8"), timeout=max(0.1, deadline - time.monotonic())
        )
    except subprocess.TimeoutExpired:
        return None, True
    try:
        report = json.loads(output[:_REPORT_LIMIT_BYTES])
    except ValueError:
        return None, False
    return (report if isinstance(report, dict) else None), False


def _status_if_ended(process: subprocess.Popen[bytes], *, wait: bool) -> int | None:
    """The candidate's exit status if it ended by itself (we are about to kill it otherwise)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        return process.wait(timeout=0.2 if wait else 0.0)
    return None


def _summarise(
    finished: _Finished, stdout_tail: str, stderr_tail: str, tests_stderr: str, wall: float
) -> SandboxReport:
    common: dict[str, Any] = {
        "stdout_tail": stdout_tail,
        "stderr_tail": stderr_tail,
        "exit_status": finished.candidate_status,
        "wall_seconds": round(wall, 4),
    }
    report = finished.report
    if report is None:
        if finished.timed_out:
            return SandboxReport("timeout", **common)
        note = "the tests' process gave no report: " + (tests_stderr.strip()[-500:] or "no output")
        return SandboxReport("crashed", notes=(note,), **common)
    tests = tuple(
        TestOutcome(str(t.get("name")), t.get("passed") is True, _text_or_none(t.get("error")))
        for t in report.get("tests", [])
        if isinstance(t, dict)
    )
    load_error = _text_or_none(report.get("load_error"))
    candidate_failure = _text_or_none(report.get("candidate_failure"))
    limit = report.get("limit")
    notes = (candidate_failure,) if candidate_failure else ()
    outcome: Outcome
    if limit in harness.LIMIT_CAUSES:
        outcome = limit
    elif candidate_failure is not None:
        outcome = _why_the_candidate_ended(finished.candidate_status)
    elif load_error is not None or report.get("loaded") is not True:
        outcome = "load_error"
    elif tests and all(t.passed for t in tests):
        outcome = "passed"
    else:
        outcome = "tests_failed"
    return SandboxReport(outcome, tests, load_error, notes=notes, **common)


def _why_the_candidate_ended(status: int | None) -> Outcome:
    """Bubblewrap exits 128 + N for a child killed by signal N; unsandboxed, the status is -N."""
    if status is None:
        return "crashed"
    if status == 0:
        return "exited_early"
    signal_number = -status if status < 0 else status - 128 if status > 128 else 0
    if signal_number in (signal.SIGXCPU, signal.SIGKILL):
        return "timeout"
    if signal_number == signal.SIGXFSZ:
        return "file_size_limit"
    return "crashed"


def _text_or_none(value: object) -> str | None:
    return value[-_TAIL_CHARS:] if isinstance(value, str) else None


def _tail(path: Path) -> str:
    if not path.exists():
        return ""
    size = path.stat().st_size
    with open(path, "rb") as file:
        file.seek(max(0, size - 4 * _TAIL_CHARS))
        return file.read().decode("utf-8", errors="replace")[-_TAIL_CHARS:]
