"""The parent side of the sandbox: start the candidate's and the tests' processes, read the verdict.

For each verification, two processes start side by side in sandboxes of their own
(``isolation.py``) and run ``harness.py``: one runs the candidate's code, the other the tests,
joined by a socket that carries requests and plain-data answers. Only the tests' process writes
the report, on a pipe only it holds; see ``harness.py`` for why that makes a forged pass
impossible. Whatever the candidate does, ``run_tests`` returns a ``SandboxReport``; it raises
only when nothing can be run safely (``SandboxUnavailable``) or for a broken installation.

The tests are untrusted too: task files come from uploads and public datasets, and a test can
find the report pipe and write anything on it. So the parent reads the report as it comes and
never holds more than ``_REPORT_LIMIT_BYTES`` of it, and takes only a report of exactly the
harness's shape (``parse_report``); anything else grades the attempt "bad_report". Tests decide
the grade (that is what they are for), but they cannot exhaust or crash the parent.

When a process ends by a signal, the outcome says why as far as the parent can tell, from the
exit status and the resource usage of the sandbox (``_killed_by``): "timeout" for the CPU limit,
"memory_limit" for an out-of-memory kill, otherwise "killed_by_signal" with the signal's name.

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
import re
import selectors
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from models_gpu.sandbox import harness
from models_gpu.sandbox.isolation import Isolation, Sandboxed, current_isolation

HARNESS = Path(harness.__file__)
HARNESS_MODULE = "dialab_sandbox_harness"
# Run in each sandbox, with argv [code directory, role, usage descriptor, packages directory (or
# "")]: the packages the operator lets sandboxed code import (``isolation.py``). It forks before any
# untrusted code runs: the child plays the role; the parent closes everything but the usage
# descriptor, waits, writes there how the child ended (its wait status) and what it used (CPU
# seconds, peak resident kilobytes), and exits as bubblewrap would (128 + N for signal N).
# Bubblewrap cannot tell us this itself: it exits on its init's word without reaping it, so its
# resource usage never includes the interpreter's, and ``os._exit(137)`` reads as a SIGKILL.
# The child closes the descriptor first thing, so what arrives there is the waiter's alone.
_BOOTSTRAP = f"""\
import os, sys
code_dir, role, usage, packages = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
child = os.fork()
if child == 0:
    os.close(usage)
    sys.path.insert(0, code_dir)
    if packages:
        sys.path.append(packages)
    from {HARNESS_MODULE} import main
    main(role)
else:
    os.closerange(0, 2)
    os.closerange(3, usage)
    os.closerange(usage + 1, 1 << 16)
    _, status, used = os.wait4(child, 0)
    os.write(usage, b"%d %r %d" % (status, used.ru_utime + used.ru_stime, used.ru_maxrss))
    code = os.waitstatus_to_exitcode(status)
    os._exit(code if code >= 0 else 128 - code)
"""
_USAGE_BYTES = 256
_TAIL_CHARS = 1500
_REPORT_LIMIT_BYTES = 4_000_000  # a real report is at most about 0.5 MB (50 tests, escaped)
_READ_BYTES = 1 << 16
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
    "killed_by_signal",
    "bad_report",
    "crashed",
]
# Above this share of its memory limit resident, a process killed by SIGKILL was most likely
# killed by the kernel's out-of-memory killer (it picks the largest process); see ``_killed_by``.
_OOM_KILL_SHARE = 0.5


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

    @property
    def cpu_seconds(self) -> int:
        """RLIMIT_CPU's soft limit; the hard one, a second later, is a SIGKILL."""
        return max(1, math.ceil(self.timeout_seconds))


@dataclass(frozen=True)
class TestOutcome:
    name: str
    passed: bool
    error: str | None


@dataclass(frozen=True)
class SandboxReport:
    """What happened. ``outcome == "passed"`` only when every test ran and passed.

    Failures are labelled by cause: "timeout" (the wall clock, or the CPU limit), the limits the
    code hit ("memory_limit", "file_size_limit", "open_files_limit"), "exited_early",
    "killed_by_signal" (a signal no limit explains; a note names it), "crashed", "load_error",
    "tests_failed", and "bad_report" when the tests' process wrote something that is not a
    report. ``exit_status`` is the candidate's interpreter's, when it ended before the tests
    did: as Popen gives it (-N for signal N), or 128 + N where only its sandbox's is known.
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
class TestsReport:
    """The tests' report, checked: exactly the shape ``harness.run_test_suite`` writes."""

    loaded: bool
    load_error: str | None
    limit: str | None  # one of harness.LIMIT_CAUSES
    tests: tuple[TestOutcome, ...]
    candidate_failure: str | None


class BadReport(ValueError):
    """What the tests' process wrote is not a report; the message says what is wrong (briefly)."""


@dataclass(frozen=True)
class _Exit:
    """How the interpreter of one sandbox ended, and what it used (zero where not known)."""

    status: int  # as Popen.returncode (-N: killed by signal N), or the sandbox's 128 + N
    signal: int | None  # the signal that killed it, if one did
    cpu_seconds: float = 0.0
    max_rss_mb: float = 0.0


@dataclass
class _Side:
    """One started sandbox, and our end of the pipe its waiter reports on (see _BOOTSTRAP)."""

    sandbox: Sandboxed
    usage_fd: int

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self.sandbox.process

    def stop(self) -> None:
        try:
            self.sandbox.stop()
        finally:
            os.close(self.usage_fd)


@dataclass(frozen=True)
class _Finished:
    """What the parent saw: a report, or why there is none, and how each process ended."""

    report: TestsReport | None = None
    timed_out: bool = False
    bad_report: str | None = None  # what was wrong with what the tests' process wrote
    tests_exit: _Exit | None = None
    candidate_exit: _Exit | None = None  # None while it was still running when the tests ended


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
    summary = _summarise(finished, limits, stdout_tail, stderr_tail, tests_stderr, wall)
    return replace(summary, isolation=where.mode)


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
        "cpu_seconds": limits.cpu_seconds,
        "memory_mb": limits.memory_mb,
        "file_size_mb": limits.file_size_mb,
        "open_files": limits.open_files,
    }
    deadline = time.monotonic() + limits.timeout_seconds + _START_UP_SECONDS
    started: list[_Side] = []
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
        _send_job(
            tests_side.process,
            {
                "tests": tests,
                "entry_point": entry_point,
                # Read, never run, on the tests' side: its import statements say which real
                # modules the tests see under the names the candidate imported.
                "candidate_source": candidate,
                "task_code": task_code,
                "channel_fd": channel_fds["tests"],
                "limits": process_limits,
            },
        )
        return _watch(tests_side, candidate_side, deadline)
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
) -> _Side:
    """One side: its stdout (unless piped to us) and stderr go to files we read the tails of."""
    home = outputs / f"{role}-home"
    usage_read, usage_write = os.pipe()
    os.set_blocking(usage_read, False)
    try:
        with contextlib.ExitStack() as files:
            error_file = files.enter_context(open(outputs / f"{role}.stderr", "wb"))
            output_file = (
                stdout
                if stdout is not None
                else files.enter_context(open(outputs / f"{role}.stdout", "wb"))
            )
            home.mkdir()
            sandbox = where.start(
                code=_BOOTSTRAP,
                code_dir=_compiled_harness(where.python),
                arguments=[role, str(usage_write), where.packages_path],
                pass_fds=(channel.fileno(), usage_write),
                stdout=output_file,
                stderr=error_file,
                tmpfs_mb=limits.file_size_mb,
                home=home,
            )
    except BaseException:
        os.close(usage_read)
        raise
    finally:
        os.close(usage_write)
    return _Side(sandbox, usage_read)


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


def _watch(tests: _Side, candidate: _Side, deadline: float) -> _Finished:
    """Read the tests' report, check it, and see how both processes ended."""
    try:
        output = _read_report(tests.process, deadline)
    except BadReport as error:  # the caller stops the sandbox at once
        return _Finished(bad_report=str(error))
    tests_exit = None if output is None else _wait_for_exit(tests, deadline)
    if tests_exit is None:
        return _Finished(timed_out=True)
    if not output:
        return _Finished(tests_exit=tests_exit)
    try:
        report = parse_report(output)
    except BadReport as error:
        return _Finished(bad_report=str(error), tests_exit=tests_exit)
    # Its exit status matters only when the tests say it ended early (it says why); it is gone
    # within moments then, while otherwise it may still be answering and is about to be killed.
    wait = 0.2 if report.candidate_failure is not None else 0.0
    candidate_exit = _wait_for_exit(candidate, time.monotonic() + wait)
    return _Finished(report, tests_exit=tests_exit, candidate_exit=candidate_exit)


def _read_report(process: subprocess.Popen[bytes], deadline: float) -> bytes | None:
    """Everything the tests' process wrote on its report pipe, or None if the deadline came first.

    Read as it comes, never more than ``_REPORT_LIMIT_BYTES`` in all: a test can find this pipe
    and write to it without end (keeping it all took a worker to 2.5 GB in 6 s). One byte more
    raises BadReport, and the sandbox is stopped before it can write again.
    """
    assert process.stdout is not None
    pipe = process.stdout.fileno()
    received = bytearray()
    with selectors.DefaultSelector() as selector:  # epoll: a busy worker's fds pass 1024
        selector.register(pipe, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not selector.select(left):
                continue
            chunk = os.read(pipe, min(_READ_BYTES, _REPORT_LIMIT_BYTES + 1 - len(received)))
            if not chunk:
                return bytes(received)
            received += chunk
            if len(received) > _REPORT_LIMIT_BYTES:
                raise BadReport(f"more than {_REPORT_LIMIT_BYTES:,} bytes")


def _wait_for_exit(side: _Side, deadline: float) -> _Exit | None:
    """How the side's interpreter ended, waiting for its sandbox until ``deadline``; None if the
    sandbox is still running. From its waiter's word when there is one, else from the sandbox's
    exit status alone (the code killed its waiter, which ends the sandbox)."""
    try:
        status = side.process.wait(timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return None
    return _waiters_word(side.usage_fd) or _Exit(status, _signal_of(status))


def _waiters_word(usage_fd: int) -> _Exit | None:
    try:
        words = os.read(usage_fd, _USAGE_BYTES).split()
        wait_status, cpu_seconds, max_rss_kb = int(words[0]), float(words[1]), int(words[2])
        status = os.waitstatus_to_exitcode(wait_status)
    except (OSError, ValueError, IndexError):  # nothing written: the waiter was killed
        return None
    return _Exit(status, -status if status < 0 else None, cpu_seconds, max_rss_kb / 1024)


def _signal_of(status: int) -> int | None:
    """The signal that ended a sandbox with exit status ``status``, if one did: -N from Popen,
    128 + N from bubblewrap or the waiter (``os._exit(128 + N)`` reads the same)."""
    if status < 0:
        return -status
    if 128 < status < 128 + signal.NSIG:
        return status - 128
    return None


# --- the report --------------------------------------------------------------------------------

_REPORT_FIELDS = frozenset({"loaded", "load_error", "limit", "tests", "candidate_failure"})
_REQUIRED_FIELDS = _REPORT_FIELDS - {"candidate_failure"}  # early returns leave it out
_TEST_FIELDS = frozenset({"name", "passed", "error"})
_MAX_NAME_CHARS = 1_000  # the harness cuts a test's name at 200 characters
_MAX_TEXT_CHARS = 20_000  # and its messages at 1,500
# A report opens one object, one list and one object per test. Counting the brackets outside
# strings before parsing bounds how deep the JSON parser recurses, whatever the recursion limit
# of this process (a library may have raised it far above what the C stack holds).
_MAX_OPENING_BRACKETS = 2 + harness._MAX_TESTS_REPORTED
# A JSON string, or an unterminated one up to the end: every match attempt at a quote succeeds,
# so stripping strings takes linear time whatever the input.
_JSON_STRING = re.compile(r'"[^"\\]*+(?:\\(?:.|\Z)[^"\\]*+)*+(?:"|\Z)', re.DOTALL)


def parse_report(data: bytes) -> TestsReport:
    """The report in ``data``, checked against the one shape the harness writes; or BadReport.

    Bounded in size and depth, one JSON object, UTF-8, no NaN or Infinity, no repeated or unknown
    keys, every field of its type, ``limit`` one of ``harness.LIMIT_CAUSES``, at most
    ``harness._MAX_TESTS_REPORTED`` tests. Never raises anything else.
    """
    if len(data) > _REPORT_LIMIT_BYTES:
        raise BadReport(f"more than {_REPORT_LIMIT_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BadReport("not UTF-8") from None
    outside_strings = _JSON_STRING.sub("", text)
    if outside_strings.count("[") + outside_strings.count("{") > _MAX_OPENING_BRACKETS:
        raise BadReport("more nested objects and lists than a report has")
    try:
        document = json.loads(
            text, parse_constant=_refuse_constant, object_pairs_hook=_object_without_repeats
        )
    except BadReport:
        raise
    except (ValueError, RecursionError) as error:  # RecursionError: only if the count is wrong
        raise BadReport(f"not one JSON document ({str(error)[:120]})") from None
    return _checked_report(document)


def _refuse_constant(name: str) -> Any:
    raise BadReport(f"{name} is not JSON")


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise BadReport("a key appears twice in one object")
    return result


def _checked_report(document: Any) -> TestsReport:
    if type(document) is not dict:
        raise BadReport("not a JSON object")
    unknown = document.keys() - _REPORT_FIELDS
    if unknown:
        raise BadReport(f"unknown field {_shown(min(unknown))}")
    missing = _REQUIRED_FIELDS - document.keys()
    if missing:
        raise BadReport(f"no {min(missing)!r} field")
    limit = document["limit"]
    if limit is not None and (type(limit) is not str or limit not in harness.LIMIT_CAUSES):
        raise BadReport(f"'limit' is {_shown(limit)}, not a known limit or null")
    tests = document["tests"]
    if type(tests) is not list:
        raise BadReport("'tests' is not a list")
    if len(tests) > harness._MAX_TESTS_REPORTED:
        raise BadReport(f"more than {harness._MAX_TESTS_REPORTED} tests")
    return TestsReport(
        loaded=_boolean(document["loaded"], "'loaded'"),
        load_error=_text(document["load_error"], "'load_error'", _MAX_TEXT_CHARS),
        limit=limit,
        tests=tuple(_checked_test(test, number) for number, test in enumerate(tests, 1)),
        candidate_failure=_text(
            document.get("candidate_failure"), "'candidate_failure'", _MAX_TEXT_CHARS
        ),
    )


def _checked_test(test: Any, number: int) -> TestOutcome:
    if type(test) is not dict or test.keys() != _TEST_FIELDS:
        raise BadReport(f"test {number} is not an object of 'name', 'passed' and 'error'")
    name = _text(test["name"], f"test {number}'s 'name'", _MAX_NAME_CHARS)
    if name is None:
        raise BadReport(f"test {number}'s 'name' is not a string")
    return TestOutcome(
        name,
        _boolean(test["passed"], f"test {number}'s 'passed'"),
        _text(test["error"], f"test {number}'s 'error'", _MAX_TEXT_CHARS),
    )


def _boolean(value: Any, what: str) -> bool:
    if type(value) is not bool:
        raise BadReport(f"{what} is not true or false")
    return value


def _text(value: Any, what: str, max_chars: int) -> str | None:
    """A string field (or null): bounded, and storable as UTF-8 (PostgreSQL refuses a lone
    surrogate such as "\\ud800", which JSON can carry and a candidate's message can hold)."""
    if value is None:
        return None
    if type(value) is not str:
        raise BadReport(f"{what} is not a string or null")
    if len(value) > max_chars:
        raise BadReport(f"{what} is longer than {max_chars:,} characters")
    return value.encode("utf-8", "replace").decode("utf-8")


def _shown(value: Any) -> str:
    return repr(value)[:40]


# --- the outcome -------------------------------------------------------------------------------


def _summarise(
    finished: _Finished,
    limits: SandboxLimits,
    stdout_tail: str,
    stderr_tail: str,
    tests_stderr: str,
    wall: float,
) -> SandboxReport:
    candidate_exit = finished.candidate_exit
    common: dict[str, Any] = {
        "stdout_tail": stdout_tail,
        "stderr_tail": stderr_tail,
        "exit_status": candidate_exit.status if candidate_exit else None,
        "wall_seconds": round(wall, 4),
    }
    report = finished.report
    if finished.timed_out:
        return SandboxReport("timeout", **common)
    if finished.bad_report is not None:
        note = f"the tests' process wrote a malformed report: {finished.bad_report}"
        return SandboxReport("bad_report", notes=(note,), **common)
    if report is None:
        return _without_a_report(finished.tests_exit, limits, tests_stderr, common)
    tests = tuple(replace(test, error=_text_or_none(test.error)) for test in report.tests)
    load_error = _text_or_none(report.load_error)
    candidate_failure = _text_or_none(report.candidate_failure)
    notes: tuple[str, ...] = (candidate_failure,) if candidate_failure else ()
    outcome: Outcome
    if report.limit is not None:  # parse_report took only one of harness.LIMIT_CAUSES
        outcome = cast(Outcome, report.limit)
    elif candidate_failure is not None:
        outcome, why = _why_it_ended(candidate_exit, limits)
        notes += (f"the candidate's process {why}",) if why else ()
    elif load_error is not None or not report.loaded:
        outcome = "load_error"
    elif tests and all(t.passed for t in tests):
        outcome = "passed"
    else:
        outcome = "tests_failed"
    return SandboxReport(outcome, tests, load_error, notes=notes, **common)


def _without_a_report(
    tests_exit: _Exit | None, limits: SandboxLimits, tests_stderr: str, common: dict[str, Any]
) -> SandboxReport:
    """The tests' process ended without writing a report: by a signal, labelled by its cause."""
    said = "the tests' process gave no report: " + (tests_stderr.strip()[-500:] or "no output")
    if tests_exit is None or tests_exit.signal is None:
        return SandboxReport("crashed", notes=(said,), **common)
    outcome, why = _killed_by(tests_exit.signal, tests_exit, limits)
    return SandboxReport(outcome, notes=(said, f"the tests' process {why}"), **common)


def _why_it_ended(ended: _Exit | None, limits: SandboxLimits) -> tuple[Outcome, str | None]:
    """Why the candidate's process ended before the tests were done, and a note that says so."""
    if ended is None:  # still running: it broke the protocol
        return "crashed", None
    if ended.signal is not None:
        return _killed_by(ended.signal, ended, limits)
    if ended.status == 0:
        return "exited_early", None
    return "crashed", f"exited with status {ended.status}"


def _killed_by(number: int, ended: _Exit, limits: SandboxLimits) -> tuple[Outcome, str]:
    """The outcome for a process killed by signal ``number``, by the cause the parent can see.

    - The CPU limit: SIGXCPU at the soft limit, SIGKILL at the hard one (soft + 1 s) for a
      process that ignored SIGXCPU; a SIGKILL counts as the CPU limit's when the CPU time used
      reached the soft limit.
    - Memory: the address-space limit shows as MemoryError (the harness reports it), not as a
      signal; a SIGKILL of a process holding at least ``_OOM_KILL_SHARE`` of its memory limit
      resident is taken for the kernel's out-of-memory killer. A process that kills itself (or
      is killed by a sandboxed neighbour) while that large reads the same: they cannot be told
      apart from here. Nor can an out-of-memory kill of a small process, or a crash caused by
      running out of address space without using it (a failed stack growth, SIGSEGV).
    - Anything else: "killed_by_signal", with the signal's name.
    """
    killed = f"was killed by {_signal_name(number)} (signal {number})"
    cpu_limit = limits.cpu_seconds
    if number == signal.SIGXCPU:
        return "timeout", f"{killed}: its CPU time limit is {cpu_limit} s"
    if number == signal.SIGKILL and ended.cpu_seconds >= cpu_limit:
        return (
            "timeout",
            f"{killed} after {ended.cpu_seconds:.1f} s of CPU time (limit {cpu_limit} s)",
        )
    if number == signal.SIGXFSZ:
        return "file_size_limit", killed
    if number == signal.SIGKILL and ended.max_rss_mb >= _OOM_KILL_SHARE * limits.memory_mb:
        return "memory_limit", (
            f"{killed} holding {ended.max_rss_mb:.0f} MB of its {limits.memory_mb} MB: most "
            "likely the kernel's out-of-memory killer"
        )
    return "killed_by_signal", killed


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "a signal without a name"


def _text_or_none(value: object) -> str | None:
    return value[-_TAIL_CHARS:] if isinstance(value, str) else None


def _tail(path: Path) -> str:
    if not path.exists():
        return ""
    size = path.stat().st_size
    with open(path, "rb") as file:
        file.seek(max(0, size - 4 * _TAIL_CHARS))
        return file.read().decode("utf-8", errors="replace")[-_TAIL_CHARS:]
