"""Hostile candidates: each must end as a failed attempt, and the parent must carry on."""

from __future__ import annotations

import os

import pytest

from models_gpu.sandbox import SandboxLimits, run_tests

ADD_TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
GOOD = "def add(a, b):\n    return a + b\n"
FAST = SandboxLimits(timeout_seconds=2, memory_mb=256)


def run(candidate: str, tests: str = ADD_TESTS, **limits: float) -> str:
    report = run_tests(
        candidate, tests, entry_point="add", limits=SandboxLimits(**limits) if limits else FAST
    )
    return report.outcome


def test_a_correct_solution_passes() -> None:
    report = run_tests(GOOD, ADD_TESTS, entry_point="add", limits=FAST)
    assert report.passed
    assert [t.passed for t in report.tests] == [True, True]


def test_a_failing_assertion_is_reported_with_its_line() -> None:
    report = run_tests("def add(a, b):\n    return a - b\n", ADD_TESTS, entry_point="add")
    assert report.outcome == "tests_failed"
    failing = [t for t in report.tests if not t.passed]
    assert failing[0].name == "line 1: assert add(1, 2) == 3"
    assert "AssertionError" in (failing[0].error or "")


def test_test_functions_and_humaneval_check_are_run() -> None:
    tests = (
        "def test_small():\n    assert add(1, 1) == 2\n\n"
        "def check(candidate):\n    assert candidate(2, 2) == 4\n"
    )
    report = run_tests(GOOD, tests, entry_point="add", limits=FAST)
    assert [t.name for t in report.tests] == ["test_small()", "check(candidate)"]
    assert report.passed


@pytest.mark.parametrize(
    ("name", "candidate", "expected"),
    [
        ("infinite loop", GOOD + "while True:\n    pass\n", {"timeout"}),
        ("sleeping", GOOD + "import time\ntime.sleep(60)\n", {"timeout"}),
        ("fork bomb", GOOD + "import os\nwhile True:\n    os.fork()\n", {"forbidden_operation"}),
        (
            "subprocess",
            GOOD + "import subprocess\nsubprocess.run(['true'])\n",
            {"forbidden_operation"},
        ),
        ("os.system", GOOD + "import os\nos.system('true')\n", {"forbidden_operation"}),
        ("memory bomb", GOOD + "x = bytearray(10**10)\n", {"memory_limit"}),
        (
            "growing memory",
            GOOD + "x = []\nwhile True:\n    x.append(' ' * 10**6)\n",
            {"memory_limit"},
        ),
        ("read /etc/passwd", GOOD + "open('/etc/passwd').read()\n", {"forbidden_operation"}),
        ("list /", GOOD + "import os\nos.listdir('/')\n", {"forbidden_operation"}),
        (
            "escape by chdir",
            GOOD + "import os\nos.chdir('/etc')\nopen('passwd')\n",
            {"forbidden_operation"},
        ),
        (
            "socket",
            GOOD + "import socket\nsocket.create_connection(('1.1.1.1', 80))\n",
            {"forbidden_operation"},
        ),
        ("raw _socket", GOOD + "import _socket\n_socket.socket()\n", {"forbidden_operation"}),
        (
            "kill the parent",
            GOOD + "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
            {"forbidden_operation"},
        ),
        (
            "kill everyone",
            GOOD + "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
            {"forbidden_operation"},
        ),
        (
            "huge file",
            GOOD + "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)\n",
            {"file_size_limit"},
        ),
        (
            "huge stdout",
            GOOD + "while True:\n    print('x' * 100000)\n",
            {"file_size_limit", "timeout"},
        ),
        (
            "file descriptors",
            GOOD + "fs = [open('f%d' % i, 'w') for i in range(10000)]\n",
            {"open_files_limit"},
        ),
        ("exit before the tests", GOOD + "import sys\nsys.exit(0)\n", {"exited_early"}),
        ("hard exit before the tests", GOOD + "import os\nos._exit(0)\n", {"crashed"}),
        ("ctypes", GOOD + "import ctypes\n", {"forbidden_operation"}),
        (
            "frame walking",
            GOOD + "import sys\nsys._getframe(1).f_locals\n",
            {"forbidden_operation"},
        ),
        (
            "traceback frames",
            GOOD + "try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame.f_back\n",
            {"forbidden_operation"},
        ),
        ("gc walking", GOOD + "import gc\ngc.get_objects()\n", {"forbidden_operation"}),
        (
            "swallowed refusal",
            GOOD + "try:\n    open('/etc/hostname')\nexcept Exception:\n    pass\n",
            {"forbidden_operation"},
        ),
        (
            "segfault",
            GOOD
            + "import sys\nsys.setrecursionlimit(10**9)\ndef f(n):\n    return f(n + 1)\nf(0)\n",
            {"crashed", "memory_limit", "load_error", "timeout"},
        ),
    ],
)
def test_hostile_code_is_contained(name: str, candidate: str, expected: set[str]) -> None:
    report = run_tests(candidate, ADD_TESTS, entry_point="add", limits=FAST)
    assert report.outcome in expected, (name, report)
    assert not report.passed


@pytest.mark.parametrize(
    "candidate",
    [
        # Redefining the test harness's names: the tests' own definitions come later and win.
        GOOD.replace("a + b", "0") + "def check(candidate):\n    pass\n",
        # Patching builtins that the tests rely on.
        GOOD.replace("a + b", "0")
        + "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {})\n",
        "import builtins\ndef add(a, b):\n    builtins.abs = lambda x: 0\n    return 0\n",
        # An answer that equals everything.
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Yes()\n",
        # Forging a report on every descriptor it can guess.
        GOOD.replace("a + b", "0")
        + 'import os\nfor fd in range(3, 1000):\n    try:\n        os.write(fd, b\'{"nonce": "x", "tests": [], "loaded": true}\\n\')\n    except OSError:\n        pass\n',  # noqa: E501
    ],
)
def test_the_harness_cannot_be_tricked_into_a_pass(candidate: str) -> None:
    tests = (
        "def check(candidate):\n"
        "    assert candidate(1, 2) == 3\n"
        "    assert abs(candidate(1, 2) - 3) < 0.5\n"
    )
    report = run_tests(candidate, tests, entry_point="add", limits=FAST)
    assert not report.passed, report


def test_the_sandbox_directory_is_removed_and_the_parent_survives(tmp_path: object) -> None:
    before = set(os.listdir("/tmp"))
    run_tests(GOOD + "open('left_behind', 'w').write('x')\n", ADD_TESTS, entry_point="add")
    assert {n for n in set(os.listdir("/tmp")) - before if n.startswith("dialab-sandbox-")} == set()
    assert os.getpid() > 0  # still here


def test_stdlib_imports_work_inside() -> None:
    candidate = (
        "import math, re, hashlib, itertools, collections\n"
        "def add(a, b):\n    return int(math.fsum([a, b]))\n"
    )
    assert run_tests(candidate, ADD_TESTS, entry_point="add", limits=FAST).passed


def test_missing_entry_point_fails() -> None:
    assert run_tests("x = 1\n", ADD_TESTS, entry_point="add", limits=FAST).outcome == "tests_failed"


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=1)
