"""The parent side of the sandbox: start the harness in a fresh process, bound it, read its report.

Whatever the candidate does, ``run_tests`` returns a ``SandboxReport``; it raises only for a
broken installation (no Python to start). Thread-safe: no ``preexec_fn`` (which can deadlock in
a threaded parent such as Django's dev server); the child limits itself before untrusted code
runs, see ``harness.py``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

HARNESS = Path(__file__).with_name("harness.py")
_TAIL_CHARS = 1500
_RESULT_LIMIT_BYTES = 1_000_000

Outcome = Literal[
    "passed",
    "tests_failed",
    "load_error",
    "exited_early",
    "timeout",
    "memory_limit",
    "file_size_limit",
    "open_files_limit",
    "forbidden_operation",
    "crashed",
]


# What the harness may name as the cause of a failure (anything else it says is ignored).
_CAUSES: frozenset[str] = frozenset(
    {"exited_early", "memory_limit", "file_size_limit", "open_files_limit"}
)


@dataclass(frozen=True)
class SandboxLimits:
    """Bounds on one sandboxed run.

    timeout_seconds: wall clock; the whole process group is killed after it. CPU time is capped
        at the same number of seconds (rounded up).
    memory_mb: address space of the child (RLIMIT_AS), interpreter included (about 20 MB).
    file_size_mb: largest file the child may write (RLIMIT_FSIZE), stdout and stderr included.
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
    """What happened. ``outcome == "passed"`` only when every test ran and passed."""

    outcome: Outcome
    tests: tuple[TestOutcome, ...] = ()
    load_error: str | None = None
    violations: tuple[str, ...] = ()
    stdout_tail: str = ""
    stderr_tail: str = ""
    exit_status: int | None = None
    wall_seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


def run_tests(
    candidate: str,
    tests: str,
    *,
    entry_point: str | None = None,
    limits: SandboxLimits | None = None,
) -> SandboxReport:
    """Run ``candidate`` then ``tests`` (asserts, ``test_*`` functions, or HumanEval ``check``)."""
    limits = limits or SandboxLimits()
    nonce = secrets.token_hex(16)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dialab-sandbox-") as private:
        private_dir = Path(private)
        private_dir.chmod(0o700)
        work_dir = private_dir / "work"
        work_dir.mkdir()
        result_path = private_dir / "result"
        with (
            open(result_path, "wb") as result_file,
            open(private_dir / "stdout", "wb") as stdout_file,
            open(private_dir / "stderr", "wb") as stderr_file,
        ):
            job = {
                "nonce": nonce,
                "result_fd": result_file.fileno(),
                "sandbox_dir": str(work_dir),
                "stdlib_dirs": _stdlib_dirs(),
                "limits": {
                    "cpu_seconds": max(1, math.ceil(limits.timeout_seconds)),
                    "memory_mb": limits.memory_mb,
                    "file_size_mb": limits.file_size_mb,
                    "open_files": limits.open_files,
                },
                "candidate": candidate,
                "tests": tests,
                "entry_point": entry_point,
            }
            (private_dir / "job.json").write_text(json.dumps(job), encoding="utf-8")
            with open(private_dir / "job.json", "rb") as job_file:
                status, timed_out = _run_child(
                    work_dir, job_file, result_file, stdout_file, stderr_file, limits
                )
        wall = time.perf_counter() - started
        report = _read_report(result_path, nonce)
        stdout_tail = _tail(private_dir / "stdout")
        stderr_tail = _tail(private_dir / "stderr")
    return _summarise(report, status, timed_out, stdout_tail, stderr_tail, wall)


def _run_child(
    work_dir: Path,
    job_file: Any,
    result_file: Any,
    stdout_file: Any,
    stderr_file: Any,
    limits: SandboxLimits,
) -> tuple[int | None, bool]:
    command = [*_network_isolation_prefix(), sys.executable, "-I", "-S", "-B", str(HARNESS)]
    process = subprocess.Popen(
        command,
        stdin=job_file,
        stdout=stdout_file,
        stderr=stderr_file,
        pass_fds=(result_file.fileno(),),
        cwd=work_dir,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(work_dir)},
        start_new_session=True,  # its own process group, so one killpg ends all it started
    )
    timed_out = False
    try:
        process.wait(timeout=limits.timeout_seconds + 1.0)  # +1: interpreter start-up
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        _kill_group(process.pid)
        process.wait()
    return process.returncode, timed_out


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone: the usual case
        os.killpg(pid, signal.SIGKILL)


def _read_report(path: Path, nonce: str) -> dict[str, Any] | None:
    """The harness's report, or None when there is no line bearing the nonce."""
    with open(path, "rb") as file:
        data = file.read(_RESULT_LIMIT_BYTES)
    for line in reversed(data.decode("utf-8", errors="replace").splitlines()):
        try:
            report = json.loads(line)
        except ValueError:
            continue
        if isinstance(report, dict) and secrets.compare_digest(str(report.get("nonce")), nonce):
            return report
    return None


def _summarise(
    report: dict[str, Any] | None,
    status: int | None,
    timed_out: bool,
    stdout_tail: str,
    stderr_tail: str,
    wall: float,
) -> SandboxReport:
    common: dict[str, Any] = {
        "stdout_tail": stdout_tail,
        "stderr_tail": stderr_tail,
        "exit_status": status,
        "wall_seconds": round(wall, 4),
    }
    killed_by = -status if status is not None and status < 0 else None
    if report is None:
        if timed_out or killed_by in (signal.SIGXCPU, signal.SIGKILL):
            return SandboxReport("timeout", **common)
        if killed_by == signal.SIGXFSZ:
            return SandboxReport("file_size_limit", **common)
        if "MemoryError" in stderr_tail:
            return SandboxReport("memory_limit", **common)
        return SandboxReport("crashed", notes=("no report from the harness",), **common)

    tests = tuple(
        TestOutcome(str(t.get("name")), t.get("passed") is True, t.get("error"))
        for t in report.get("tests", [])
        if isinstance(t, dict)
    )
    violations = tuple(str(v) for v in report.get("violations", []))
    load_error = report.get("load_error")
    outcome: Outcome
    if violations:
        outcome = "forbidden_operation"
    elif report.get("limit") in _CAUSES:
        outcome = report["limit"]
    elif load_error is not None:
        outcome = "load_error"
    elif tests and all(t.passed for t in tests) and status == 0:
        outcome = "passed"
    else:
        outcome = "tests_failed"
    return SandboxReport(
        outcome, tests, load_error if isinstance(load_error, str) else None, violations, **common
    )


def _tail(path: Path) -> str:
    size = path.stat().st_size
    with open(path, "rb") as file:
        file.seek(max(0, size - 4 * _TAIL_CHARS))
        return file.read().decode("utf-8", errors="replace")[-_TAIL_CHARS:]


@functools.cache
def _stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({paths["stdlib"], paths["platstdlib"], os.path.dirname(os.__file__)})


@functools.cache
def _network_isolation_prefix() -> tuple[str, ...]:
    """``unshare --net`` when it works here (root, or a kernel that allows it), else nothing.

    A new network namespace has only a downed loopback device, so even code that gets past the
    audit hook cannot reach the network. Probed once per process.
    """
    unshare = shutil.which("unshare")
    if unshare is None:
        return ()
    try:
        probe = subprocess.run(
            [unshare, "--net", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    return (unshare, "--net") if probe.returncode == 0 else ()


def network_isolated() -> bool:
    """Whether sandboxed runs get their own, empty network namespace on this machine."""
    return bool(_network_isolation_prefix())
