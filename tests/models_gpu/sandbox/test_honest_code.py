"""What a sandboxed run does for honest code: tests of every style, limits, and the wire format.

The hostile cases are in ``test_attacks.py``.
"""

from __future__ import annotations

import os
import platform
import struct
from pathlib import Path

import pytest

from models_gpu.sandbox import (
    SandboxLimits,
    SandboxUnavailable,
    current_isolation,
    harness,
    run_tests,
)
from models_gpu.sandbox import isolation as isolation_module
from models_gpu.sandbox.seccomp import compiled_filter, denied_calls

ADD_TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
GOOD = "def add(a, b):\n    return a + b\n"
FAST = SandboxLimits(timeout_seconds=1, memory_mb=256)


def outcome(candidate: str, tests: str = ADD_TESTS, entry_point: str | None = "add") -> str:
    return run_tests(candidate, tests, entry_point=entry_point, limits=FAST).outcome


def test_a_correct_solution_passes_in_bubblewrap() -> None:
    report = run_tests(GOOD, ADD_TESTS, entry_point="add", limits=FAST)
    assert report.passed
    assert [t.passed for t in report.tests] == [True, True]
    assert report.isolation == "bubblewrap"


def test_a_failing_assertion_is_reported_with_its_line() -> None:
    report = run_tests("def add(a, b):\n    return a - b\n", ADD_TESTS, entry_point="add")
    assert report.outcome == "tests_failed"
    failing = [t for t in report.tests if not t.passed]
    assert failing[0].name == "line 1: assert add(1, 2) == 3"
    assert "assert add(1, 2) == 3" in (failing[0].error or "")
    assert "AssertionError" in (failing[0].error or "")


def test_test_functions_and_humaneval_check_are_run() -> None:
    tests = (
        "def test_small():\n    assert add(1, 1) == 2\n\n"
        "def check(candidate):\n    assert candidate(2, 2) == 4\n"
    )
    report = run_tests(GOOD, tests, entry_point="add", limits=FAST)
    assert [t.name for t in report.tests] == ["test_small()", "check(candidate)"]
    assert report.passed


def test_classes_generators_and_in_place_changes_work_through_the_boundary() -> None:
    candidate = (
        "class Stack:\n"
        "    def __init__(self):\n        self.items = []\n"
        "    def push(self, x):\n        self.items.append(x)\n"
        "    def pop(self):\n        return self.items.pop()\n"
        "    def __len__(self):\n        return len(self.items)\n"
        "    def __eq__(self, other):\n        return self.items == other.items\n"
        "def countdown(n):\n    while n:\n        yield n\n        n -= 1\n"
        "def sort_in_place(values):\n    values.sort()\n"
        "LIMIT = {'a': (1, 2.5), 'b': {3, 4}, 'c': b'xy', 'd': 1j}\n"
    )
    tests = (
        "s = Stack()\ns.push(1)\ns.push(2)\n"
        "assert s.pop() == 2\nassert len(s) == 1\nassert s.items == [1]\n"
        "t = Stack()\nt.push(1)\nassert s == t\n"
        "assert list(countdown(3)) == [3, 2, 1]\n"
        "values = [3, 1, 2]\nsort_in_place(values)\nassert values == [1, 2, 3]\n"
        "assert LIMIT == {'a': (1, 2.5), 'b': {3, 4}, 'c': b'xy', 'd': 1j}\n"
    )
    report = run_tests(candidate, tests, limits=FAST)
    assert report.passed, report


def test_asserts_in_a_loop_are_a_test() -> None:
    tests = (
        "cases = [(1, 2, 3), (2, 2, 4)]\nfor a, b, total in cases:\n    assert add(a, b) == total\n"
    )
    report = run_tests(GOOD, tests, entry_point="add", limits=FAST)
    assert report.passed, report
    assert [t.name for t in report.tests] == ["line 2: for a, b, total in cases:"]
    wrong = run_tests("def add(a, b):\n    return 3\n", tests, entry_point="add", limits=FAST)
    assert wrong.outcome == "tests_failed"


def test_the_candidates_exceptions_can_be_expected_by_the_tests() -> None:
    candidate = (
        "class Bad(ValueError):\n    pass\n"
        "def parse(text):\n    if not text:\n        raise Bad('empty')\n    return int(text)\n"
    )
    tests = (
        "def test_raises():\n"
        "    try:\n        parse('')\n    except ValueError as error:\n"
        "        assert 'empty' in str(error)\n"
        "    else:\n        raise AssertionError('no error')\n"
        "assert parse('12') == 12\n"
    )
    assert run_tests(candidate, tests, limits=FAST).passed


def test_an_object_from_the_candidate_never_equals_plain_data() -> None:
    candidate = (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "def make():\n    return Yes()\n"
    )
    report = run_tests(candidate, "assert make() == 3\n", limits=FAST)
    assert report.outcome == "tests_failed"


def test_the_entry_point_must_return_plain_data() -> None:
    candidate = "class Box:\n    pass\ndef add(a, b):\n    return Box()\n"
    report = run_tests(candidate, "def check(f):\n    f(1, 2)\n", entry_point="add")
    assert report.outcome == "tests_failed"
    assert "not plain data" in (report.tests[0].error or "")


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (GOOD + "while True:\n    pass\n", "timeout"),
        (GOOD + "import time\ntime.sleep(60)\n", "timeout"),
        (GOOD + "x = bytearray(10**10)\n", "memory_limit"),
        (GOOD + "x = []\nwhile True:\n    x.append(' ' * 10**6)\n", "memory_limit"),
        (
            GOOD + "with open('big', 'wb') as f:\n    while True:\n        f.write(b'x' * 2**20)\n",
            "file_size_limit",
        ),
        (GOOD + "while True:\n    print('x' * 100000)\n", "file_size_limit"),
        (GOOD + "fs = [open('f%d' % i, 'w') for i in range(10000)]\n", "open_files_limit"),
        (GOOD + "import sys\nsys.exit(0)\n", "exited_early"),
        (GOOD + "import os\nos._exit(0)\n", "exited_early"),
        ("def add(a, b):\n    import sys\n    sys.exit(0)\n", "exited_early"),
        ("def add(a, b):\n    import os\n    os._exit(0)\n", "exited_early"),
        ("def add(a, b):\n    return bytearray(10**10)\n", "memory_limit"),
        ("syntax error(\n", "load_error"),
    ],
)
def test_limits_end_the_attempt_with_their_cause(candidate: str, expected: str) -> None:
    assert outcome(candidate) == expected


def test_many_files_fill_the_size_capped_tmpfs_and_fail() -> None:
    candidate = (
        GOOD + "i = 0\nwhile True:\n    open('f%d' % i, 'wb').write(b'x' * 2**20)\n    i += 1\n"
    )
    report = run_tests(candidate, ADD_TESTS, entry_point="add", limits=FAST)
    assert report.outcome == "load_error"
    assert "No space left on device" in (report.load_error or "")


def test_stdlib_imports_work_inside() -> None:
    candidate = (
        "import math, re, hashlib, itertools, collections, json, decimal, fractions, heapq\n"
        "def add(a, b):\n    return int(math.fsum([a, b]))\n"
    )
    assert outcome(candidate) == "passed"


def test_output_is_shown_in_the_report() -> None:
    report = run_tests(GOOD + "print('hello from the candidate')\n", ADD_TESTS, entry_point="add")
    assert "hello from the candidate" in report.stdout_tail


def test_missing_entry_point_fails() -> None:
    assert outcome("x = 1\n") == "tests_failed"


def test_tests_that_test_nothing_fail() -> None:
    assert outcome(GOOD, tests="x = 1\n") == "tests_failed"


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="memory_mb"):
        SandboxLimits(memory_mb=1)


# --- the wire format ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        3,
        2**100,
        -0.5,
        "é\udcff",
        [1, (2, 3)],
        {1: {"a": frozenset({1})}},
        {1, 2},
        b"\x00\xff",
        1 + 2j,
    ],
)
def test_plain_data_round_trips(value: object) -> None:
    assert harness.decode(harness.encode(value), lambda n: n) == value


def test_nan_and_infinity_round_trip() -> None:
    decoded = harness.decode(harness.encode([float("inf"), float("nan")]), lambda n: n)
    assert decoded[0] == float("inf") and decoded[1] != decoded[1]


@pytest.mark.parametrize(
    "wire",
    [
        {"list": 1},
        {"set": [{"list": []}]},  # unhashable
        {"dict": [[1]]},
        {"evil": []},
        {"list": [], "tuple": []},
        {"bytes": "zz"},
        [1, 2],
    ],
)
def test_malformed_values_are_protocol_errors(wire: object) -> None:
    with pytest.raises(harness.ProtocolError):
        harness.decode(wire, lambda n: n)


def test_deep_values_are_refused_both_ways() -> None:
    deep: list[object] = []
    for _ in range(harness.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ValueError, match="nested"):
        harness.encode(deep)
    wire: object = 1
    for _ in range(harness.MAX_DEPTH + 5):
        wire = {"list": [wire]}
    with pytest.raises(harness.ProtocolError, match="nested"):
        harness.decode(wire, lambda n: n)


def test_frames_over_the_limit_are_refused() -> None:
    reader, writer = os.pipe()
    try:
        os.write(writer, struct.pack(">I", harness.MAX_FRAME_BYTES + 1))
        with pytest.raises(harness.ProtocolError, match="limit"):
            harness.receive(reader)
    finally:
        os.close(reader)
        os.close(writer)


# --- the isolation ------------------------------------------------------------------------------


def test_the_seccomp_filter_is_well_formed() -> None:
    program = compiled_filter("x86_64")
    assert program is not None
    assert len(program) % 8 == 0
    # architecture check, x32 check, one comparison per denied call, allow, deny
    assert len(program) // 8 == 4 + 1 + len(denied_calls()) + 2
    assert compiled_filter("sparc") is None
    assert compiled_filter(platform.machine()) is not None or platform.machine() not in (
        "x86_64",
        "aarch64",
    )


def test_a_denied_system_call_fails_with_eperm_inside() -> None:
    candidate = (
        "import ctypes, errno\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "RESULT = [libc.syscall(number, 0, 0, 0) for number in (101, 425)]\n"  # ptrace, io_uring
        "ERRNO = ctypes.get_errno()\n"
    )
    if platform.machine() != "x86_64":
        pytest.skip("the numbers above are x86-64's")
    report = run_tests(candidate, "assert RESULT == [-1, -1]\nassert ERRNO == 1\n", limits=FAST)
    assert report.passed, report


def test_without_bubblewrap_nothing_runs_and_the_error_says_how_to_enable_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    isolation_module._isolation.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
            run_tests(GOOD, ADD_TESTS, entry_point="add")
    finally:
        monkeypatch.undo()
        isolation_module._isolation.cache_clear()


def test_the_explicit_unsandboxed_mode_runs_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALAB_SANDBOX", "none")
    report = run_tests(GOOD, ADD_TESTS, entry_point="add", limits=FAST)
    assert report.passed
    assert report.isolation == "none"


def test_a_misspelt_mode_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALAB_SANDBOX", "bubblewarp")
    with pytest.raises(ValueError, match="DIALAB_SANDBOX"):
        current_isolation()


def test_a_harness_directory_someone_else_could_write_is_not_trusted(tmp_path: Path) -> None:
    from models_gpu.sandbox.runner import HARNESS_MODULE, _ours_and_closed

    directory = tmp_path / "harness"
    directory.mkdir(mode=0o755)
    (directory / f"{HARNESS_MODULE}.py").write_text("")
    (directory / f"{HARNESS_MODULE}.py").chmod(0o644)
    assert _ours_and_closed(directory)
    directory.chmod(0o777)
    assert not _ours_and_closed(directory)
    directory.chmod(0o755)
    if os.geteuid() == 0:  # a file planted by another user
        os.chown(directory / f"{HARNESS_MODULE}.py", 65534, 65534)
        assert not _ours_and_closed(directory)


def test_no_installed_packages_are_visible_inside() -> None:
    candidate = (
        "import glob, os, sys\n"
        "dirs = glob.glob('/usr/lib*/python3*/*-packages') + glob.glob('/usr/local/lib*/python3*/*-packages')\n"  # noqa: E501
        "SEEN = sorted(name for d in dirs for name in os.listdir(d))\n"
        "ROOT = sorted(os.listdir('/'))\n"
    )
    allowed = {
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "usr",
        "dev",
        "tmp",
        "sandbox-code",
        "sandbox-packages",  # only what DIALAB_SANDBOX_PACKAGES allows: see below
    }
    tests = f"assert SEEN == []\nassert set(ROOT) <= {allowed!r}\n"
    report = run_tests(candidate, tests, limits=FAST)
    assert report.passed, report


def test_each_sandbox_has_a_loopback_of_its_own_and_no_other_interface() -> None:
    """Loopback is up inside each sandbox's network namespace, and reaches only that sandbox: a
    port the candidate listens on is not there for the tests' process beside it."""
    candidate = (
        "import socket\n"
        "INTERFACES = [name for _, name in socket.if_nameindex()]\n"
        "listener = socket.socket()\nlistener.bind(('127.0.0.1', 0))\nlistener.listen()\n"
        "PORT = listener.getsockname()[1]\n"
        "socket.create_connection(('127.0.0.1', PORT), timeout=1).close()\n"
    )
    tests = (
        "import socket\n"
        "assert INTERFACES == ['lo']\n"
        "def test_the_candidates_port_is_not_here():\n"
        "    try:\n"
        "        socket.create_connection(('127.0.0.1', PORT), timeout=1)\n"
        "    except ConnectionRefusedError:\n"
        "        return\n"
        "    raise AssertionError('connected to the other sandbox')\n"
    )
    report = run_tests(candidate, tests, limits=FAST)
    assert report.passed, report


def test_the_allowed_packages_are_importable_on_both_sides() -> None:
    numpy = pytest.importorskip("numpy")
    candidate = (
        "import numpy as np\ndef stats(xs):\n    return np.mean(xs), np.int64(len(xs))\n"
        "def count(xs):\n    return np.int64(len(xs))\n"
    )
    tests = (
        "import numpy as np\n"
        "mean, n = stats([1, 2, 3])\n"
        "np.testing.assert_allclose(mean, 2.0)\n"
        "assert n == 3\n"
        "assert count([1]) == 1\n"
    )
    # The entry point's answer is plain data (numpy's float64 is a float); another function's
    # numpy integer compares as the int it stands for.
    limits = SandboxLimits(timeout_seconds=5)
    report = run_tests(candidate, tests, entry_point="stats", limits=limits)
    assert report.passed, report
    assert numpy.__name__ == "numpy"


def test_no_packages_when_the_operator_allows_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALAB_SANDBOX_PACKAGES", "")
    report = run_tests("import numpy\n", "assert True\n", limits=FAST)
    assert report.outcome == "load_error"
    assert "No module named 'numpy'" in (report.load_error or "")


def test_the_packages_setting_is_validated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIALAB_SANDBOX_PACKAGES", " numpy, sympy ,numpy,")
    assert isolation_module.configured_packages() == ("numpy", "sympy")
    monkeypatch.setenv("DIALAB_SANDBOX_PACKAGES", "numpy,../etc")
    with pytest.raises(ValueError, match="not a top-level import name"):
        isolation_module.configured_packages()
    assert isolation_module.installed_package_dirs(("surely_not_installed_here",)) == {}


def test_a_worker_holding_over_1024_descriptors_still_runs_verifications() -> None:
    """Every descriptor the sandbox's parent side opens is then numbered over 1024, where
    select() refuses to work."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the hard limit on open files is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (2048, hard))
    held = []
    try:
        while not held or held[-1] < 1100:
            held.append(os.open(os.devnull, os.O_RDONLY))
        report = run_tests(GOOD, ADD_TESTS, entry_point="add", limits=FAST)
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert report.passed, report
