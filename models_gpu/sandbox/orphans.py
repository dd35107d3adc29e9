"""Find and kill sandboxes that lost their bubblewrap: a worker killed while one was starting.

bubblewrap starts the sandbox's first process and then, once it has written the namespace's user
map, asks the kernel to kill itself with the worker (``--die-with-parent``) and lets that process
go on. The first process asks the same for itself only after it was let go. A worker killed in
between kills bubblewrap, and the first process waits forever for a go that never comes: it holds
no job and no CPU, but it is never reaped (seen once in a test run that killed workers on purpose).

Such an orphan is the first process of its own PID namespace, still carries the sandbox's command
line, and its parent is no longer a sandbox process. Workers sweep them when they start
(``workers.recovery``); a live sandbox's first process always has its bubblewrap as its parent, so
the sweep never touches a verification in progress.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from models_gpu.sandbox.runner import HARNESS_MODULE

_PROC = Path("/proc")
_MARKER = HARNESS_MODULE.encode()  # in the command line of every sandbox process and its bwrap


def orphaned_sandboxes() -> list[int]:
    """The pids of sandboxes whose bubblewrap is gone, of any sandbox user on this machine."""
    return [pid for pid in _sandbox_processes() if _orphaned_first_process(_status(pid))]


def kill_orphaned_sandboxes() -> list[int]:
    """Kill every orphaned sandbox (its namespace dies with it); the pids killed."""
    killed = []
    for pid in orphaned_sandboxes():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


def _sandbox_processes() -> list[int]:
    return [int(entry.name) for entry in _PROC.iterdir() if entry.name.isdigit() and _marked(entry)]


def _marked(entry: Path) -> bool:
    try:
        return _MARKER in (entry / "cmdline").read_bytes()
    except OSError:  # gone, or not ours to read
        return False


def _status(pid: int) -> dict[str, str]:
    try:
        lines = (_PROC / str(pid) / "status").read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _orphaned_first_process(status: dict[str, str]) -> bool:
    """Whether the process is process 1 of a PID namespace below ours (NSpid: its pid at each
    level) and its parent is not a sandbox process."""
    levels = status.get("NSpid", "").split()
    parent = status.get("PPid", "").strip()
    first = len(levels) > 1 and levels[-1] == "1"
    return first and parent.isdigit() and not _marked(_PROC / parent)
