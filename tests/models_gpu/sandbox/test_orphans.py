"""The sweep kills a sandbox whose bubblewrap is gone, and nothing else.

bubblewrap's own race (a worker killed while a sandbox starts) cannot be timed from a test, so the
orphan is made the way it is left: the first process of a new PID namespace, with the sandbox's
marker on its command line, whose parent was killed. ``unshare`` (util-linux) makes it; the live
sandbox next to it is a real one.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from models_gpu.sandbox import SandboxLimits, run_tests
from models_gpu.sandbox.orphans import kill_orphaned_sandboxes, orphaned_sandboxes
from models_gpu.sandbox.runner import HARNESS_MODULE
from tests.models_gpu.sandbox.test_attacks import sandboxed_processes

pytestmark = pytest.mark.skipif(not shutil.which("unshare"), reason="needs util-linux's unshare")

SLEEPS = "def add(a, b):\n    import time\n    time.sleep(30)\n    return a + b\n"


def namespace_first_child(parent: int) -> int:
    """The pid of ``parent``'s child, once it has one."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise AssertionError("unshare started no child")


def gone(pid: int) -> bool:
    try:
        return "State:\tZ" in Path(f"/proc/{pid}/status").read_text()  # a zombie, not reaped yet
    except FileNotFoundError:
        return True


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 10
    while not gone(pid):
        assert time.monotonic() < deadline, f"process {pid} is still alive"
        time.sleep(0.01)


def test_a_sandbox_whose_bubblewrap_was_killed_is_swept_and_a_live_one_is_not() -> None:
    # A real verification, in progress the whole time the sweep runs.
    live = threading.Thread(
        target=run_tests,
        args=(SLEEPS, "assert add(1, 2) == 3\n"),
        kwargs={"entry_point": "add", "limits": SandboxLimits(timeout_seconds=5)},
    )
    live.start()
    # Each side of it is bubblewrap, its namespace's first process and the interpreter (which
    # starts one more): with six, both sides' first processes are there.
    deadline = time.monotonic() + 30
    while len(sandboxed_processes()) < 6:
        assert time.monotonic() < deadline, "the verification did not start"
        time.sleep(0.01)
    starter = subprocess.Popen(
        ["unshare", "--user", "--pid", "--fork", "sh", "-c", "sleep 600", HARNESS_MODULE]
    )
    try:
        orphan = namespace_first_child(starter.pid)
        assert orphan not in orphaned_sandboxes(), "its parent is still there"
        starter.send_signal(signal.SIGKILL)
        starter.wait()

        assert orphaned_sandboxes() == [orphan]
        assert kill_orphaned_sandboxes() == [orphan]
        wait_until_gone(orphan)
        assert live.is_alive(), "the verification in progress was left alone"
        assert orphaned_sandboxes() == []
    finally:
        starter.kill()
        starter.wait()
        live.join()
