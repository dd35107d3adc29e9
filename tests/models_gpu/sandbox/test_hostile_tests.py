"""The tests are untrusted too, and every failed attempt says why it failed.

Task files come from uploads and public datasets, so the tests' process may be hostile: it can
find the pipe its report goes on and write anything there, without end. The parent must stay
bounded and standing, and grade such an attempt "bad_report". And when a process is killed, the
outcome names the cause the parent can see: the CPU limit ("timeout"), an out-of-memory kill
("memory_limit"), or another signal ("killed_by_signal").
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, get_args

import pytest

from models_gpu.sandbox import SandboxLimits, harness, run_tests, runner
from models_gpu.sandbox.runner import (
    BadReport,
    Outcome,
    _Exit,
    _killed_by,
    _signal_of,
    _why_it_ended,
    parse_report,
)
from tests.models_gpu.sandbox.test_attacks import sandboxed_processes

REPO = Path(__file__).resolve().parents[3]
CANDIDATE = "def add(a, b):\n    return a + b\n"
FAST = SandboxLimits(timeout_seconds=2, memory_mb=256)

# --- hostile reports ---------------------------------------------------------------------------

# A report the harness could have written, of a passing attempt: each hostile report below is
# this one with one thing wrong, so that a validator letting it through would grade a pass.
PASSING: dict[str, Any] = {
    "loaded": True,
    "load_error": None,
    "limit": None,
    "tests": [{"name": "line 1: assert add(1, 2) == 3", "passed": True, "error": None}],
    "candidate_failure": None,
}


def passing(**changes: Any) -> bytes:
    return json.dumps({**PASSING, **changes}).encode()


def passing_test(**changes: Any) -> bytes:
    return passing(tests=[{**PASSING["tests"][0], **changes}])


HOSTILE_REPORTS: dict[str, bytes] = {
    "nested lists, deep": b"[" * 100_000,
    "nested objects, deep": b'{"a": ' * 100_000,
    "nested inside a field": passing(load_error=json.loads("[" * 60 + "]" * 60)),
    "tests is a number, nothing else": b'{"tests": 7}',
    "tests is a number": passing(tests=7),
    "tests is an object": passing(tests={"name": "x"}),
    "a test is a list": passing(tests=[["x", True, None]]),
    "an unknown field": passing(passed=True),
    "an unknown field in a test": passing_test(limit=None),
    "a test without its error": passing(tests=[{"name": "x", "passed": True}]),
    "a missing field": json.dumps({k: v for k, v in PASSING.items() if k != "limit"}).encode(),
    "passed is a string": passing_test(passed="yes"),
    "passed is a number": passing_test(passed=1),
    "loaded is a string": passing(loaded="true"),
    "a name that is a number": passing_test(name=7),
    "a name that is null": passing_test(name=None),
    "a huge name": passing_test(name="x" * 100_000),
    "a huge load error": passing(load_error="x" * 1_000_000),
    "an error that is a list": passing_test(error=["x"]),
    "an unknown limit": passing(limit="timeout"),
    "a limit that is a list": passing(limit=["memory_limit"]),
    "a candidate failure that is a number": passing(candidate_failure=1),
    "51 tests": passing(tests=PASSING["tests"] * 51),
    "not UTF-8": b"\xff\xfe" + passing(),
    "UTF-8 cut in the middle of a character": passing_test(name="é").replace(b"\\u00e9", b"\xc3"),
    "two JSON objects": passing() + passing(),
    "a report then garbage": passing() + b"x",
    "NaN": passing().replace(b'"load_error": null', b'"load_error": NaN'),
    "Infinity": passing().replace(b'"load_error": null', b'"load_error": Infinity'),
    "-Infinity": passing().replace(b'"load_error": null', b'"load_error": -Infinity'),
    "a repeated key": passing().replace(b'"loaded": true', b'"loaded": false, "loaded": true'),
    "a number too long to read": passing().replace(b'"limit": null', b'"limit": 1' + b"0" * 5000),
    "a list": json.dumps([PASSING]).encode(),
    "a string": b'"passed"',
    "null": b"null",
    "whitespace": b"   \n",
    "not JSON": b"passed",
    "an unterminated string": b'{"loaded": "' + b"[" * 1000,
}


def on_the_report_pipe(payload: bytes) -> str:
    """Tests code that finds the report pipe (the only FIFO among its descriptors: stdin is
    /dev/null, stdout and stderr a file, the channel a socket), writes ``payload`` and ends."""
    return (
        "import os, stat\n"
        f"payload = {payload!r}\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        if stat.S_ISFIFO(os.fstat(fd).st_mode):\n"
        "            view = memoryview(payload)\n"
        "            while view:\n"
        "                view = view[os.write(fd, view):]\n"
        "    except OSError:\n"
        "        pass\n"
        "os._exit(0)\n"
    )


def test_a_report_written_by_the_tests_code_itself_is_taken() -> None:
    """The tests decide the grade (what they are for): a well-formed report from the tests' own
    code is read like the harness's. This is also what shows that the hostile reports below
    reach the parent: each would pass if the parent accepted it."""
    report = run_tests(CANDIDATE, on_the_report_pipe(passing()), limits=FAST)
    assert report.outcome == "passed", report


@pytest.mark.parametrize("name", list(HOSTILE_REPORTS))
def test_a_malformed_report_from_the_tests_grades_bad_report(name: str) -> None:
    report = run_tests(CANDIDATE, on_the_report_pipe(HOSTILE_REPORTS[name]), limits=FAST)
    assert report.outcome == "bad_report", (name, report)
    assert not report.passed
    assert len(report.notes) == 1
    assert report.notes[0].startswith("the tests' process wrote a malformed report: ")
    assert len(report.notes[0]) < 250, report.notes[0]


@pytest.mark.parametrize("name", list(HOSTILE_REPORTS))
def test_the_validator_refuses_each_malformed_report(name: str) -> None:
    with pytest.raises(BadReport):
        parse_report(HOSTILE_REPORTS[name])


def test_the_validator_takes_what_the_harness_writes() -> None:
    assert parse_report(passing()).tests == (
        runner.TestOutcome("line 1: assert add(1, 2) == 3", True, None),
    )
    # The harness's early returns leave out candidate_failure.
    early = {"loaded": False, "load_error": "SyntaxError", "limit": None, "tests": []}
    assert parse_report(json.dumps(early).encode()).candidate_failure is None
    for limit in sorted(harness.LIMIT_CAUSES):
        assert parse_report(passing(limit=limit)).limit == limit
    fifty = [{"name": f"t{i}", "passed": False, "error": "é\n" * 700} for i in range(50)]
    assert len(parse_report(passing(tests=fifty)).tests) == 50


def test_the_validator_makes_a_lone_surrogate_storable() -> None:
    """JSON can carry "\\ud800" (a candidate's exception message can hold one), and PostgreSQL
    refuses it in a JSON column: it is replaced, not stored."""
    parsed = parse_report(passing_test(name="x\ud800y", passed=False, error="\udfff"))
    assert parsed.tests[0].name == "x?y"
    assert parsed.tests[0].error == "?"


def test_the_validator_does_not_recurse_with_a_raised_recursion_limit() -> None:
    """A library may raise the recursion limit past what the C stack holds; deep nesting is
    refused before the JSON parser sees it, whatever the limit."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        with pytest.raises(BadReport, match="nested"):
            parse_report(b"[" * 3_000_000)
    finally:
        sys.setrecursionlimit(before)


@pytest.mark.parametrize(
    "payload",
    [
        b'"' + b'\\"' * 1_999_999,  # every quote escaped, never closed
        b'"' + b'\\"' * 1_999_998 + b"\\",
        b'"' * 4_000_000,
        b"[" * 4_000_000,
    ],
)
def test_the_validator_takes_linear_time_on_the_largest_reports(payload: bytes) -> None:
    started = time.perf_counter()
    with pytest.raises(BadReport):
        parse_report(payload)
    assert time.perf_counter() - started < 2.0


def test_every_limit_the_harness_reports_is_an_outcome() -> None:
    assert set(get_args(Outcome)) >= harness.LIMIT_CAUSES


# --- an endless report -------------------------------------------------------------------------

# Tests code that writes as fast as it can on every descriptor it holds, for 4 s; non-blocking,
# so that a full socket or pipe does not stop it writing on the others.
FLOOD = (
    "import os, time\n"
    "chunk = b'x' * 65536\n"
    "for fd in range(64):\n"
    "    try:\n"
    "        os.set_blocking(fd, False)\n"
    "    except OSError:\n"
    "        pass\n"
    "end = time.monotonic() + 4\n"
    "while time.monotonic() < end:\n"
    "    for fd in range(64):\n"
    "        try:\n"
    "            os.write(fd, chunk)\n"
    "        except OSError:\n"
    "            pass\n"
)

# Run in a fresh interpreter, so that its peak resident memory is the parent's own: one warm-up
# verification (modules imported, harness compiled), then the flood.
MEASURE = """
import json, resource, sys
from models_gpu.sandbox import SandboxLimits, run_tests
limits = SandboxLimits(timeout_seconds=5, memory_mb=256)
run_tests(sys.argv[1], "assert add(1, 2) == 3\\n", limits=limits)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
report = run_tests(sys.argv[1], sys.argv[2], limits=limits)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": report.outcome, "notes": report.notes, "wall": report.wall_seconds,
                  "growth_mb": (after - before) / 1024, "isolation": report.isolation}))
"""


def test_an_endless_report_is_cut_at_the_limit_and_the_parent_stays_small() -> None:
    """Kept whole, this flood took the parent to 2.2 GB in 7 s; read with a bound, it grows by
    about the report limit (4 MB), and the sandbox is stopped as soon as the limit is passed."""
    measured = subprocess.run(
        [sys.executable, "-c", MEASURE, CANDIDATE, FLOOD],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(measured.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "bad_report", result
    assert result["notes"] == [
        "the tests' process wrote a malformed report: more than 4,000,000 bytes"
    ]
    assert result["growth_mb"] < 50, result
    assert result["wall"] < 3.5, result  # stopped at the limit, not after the flood's 4 s
    if result["isolation"] == "bubblewrap":  # see the last test of this file
        assert sandboxed_processes() == []


# --- outcomes labelled by cause ----------------------------------------------------------------

LOADS_THEN = "assert add(1, 2) == 3\n"


def outcome_of(candidate: str, tests: str = LOADS_THEN, **limits: Any) -> Any:
    limits = {"timeout_seconds": 1, "memory_mb": 256, **limits}
    started = time.perf_counter()
    report = run_tests(candidate, tests, limits=SandboxLimits(**limits))
    return report, time.perf_counter() - started


@pytest.mark.parametrize(
    "candidate",
    [
        "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
        "def add(a, b):\n    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
    ],
    ids=["while loading", "during a call"],
)
def test_a_candidate_that_kills_itself_is_killed_by_signal_not_a_timeout(candidate: str) -> None:
    report, seconds = outcome_of(candidate)
    assert report.outcome == "killed_by_signal", report
    assert "killed by SIGKILL (signal 9)" in report.notes[-1]
    assert report.exit_status == -signal.SIGKILL
    assert seconds < 1.0  # well before the 1 s CPU limit or the 3 s wall deadline


def test_a_segmentation_fault_is_killed_by_signal() -> None:
    report, _ = outcome_of("import ctypes\nctypes.string_at(0)\n")
    assert report.outcome == "killed_by_signal", report
    assert "killed by SIGSEGV (signal 11)" in report.notes[-1]


def test_an_exit_status_above_128_is_not_taken_for_a_signal() -> None:
    """Bubblewrap exits 128 + N for signal N, and 137 for os._exit(137): the waiter inside the
    sandbox tells them apart."""
    report, _ = outcome_of("import os\nos._exit(137)\n")
    assert report.outcome == "crashed", report
    assert report.notes[-1] == "the candidate's process exited with status 137"


@pytest.mark.parametrize(
    "candidate",
    [
        "while True:\n    pass\n",
        # Ignoring SIGXCPU, it is killed by SIGKILL at the hard limit, a second later.
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n",
        "def add(a, b):\n    while True:\n        pass\n",
    ],
    ids=["spin", "spin ignoring SIGXCPU", "spin in a call"],
)
def test_a_candidate_spinning_the_cpu_is_a_timeout(candidate: str) -> None:
    report, _ = outcome_of(candidate)
    assert report.outcome == "timeout", report


def test_a_large_process_killed_by_sigkill_is_a_memory_limit() -> None:
    """What the kernel's out-of-memory killer does to a process within its address-space limit,
    played by the process itself: 200 MB resident of 256 MB, then SIGKILL."""
    candidate = (
        "import os, signal\nx = bytearray(200 * 2**20)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    report, _ = outcome_of(candidate)
    assert report.outcome == "memory_limit", report
    assert "out-of-memory killer" in report.notes[-1]


def test_a_tests_process_killed_without_a_report_is_labelled_by_cause() -> None:
    report, _ = outcome_of(CANDIDATE, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert report.outcome == "killed_by_signal", report
    assert report.notes == (
        "the tests' process gave no report: no output",
        "the tests' process was killed by SIGSEGV (signal 11)",
    )
    spinning, _ = outcome_of(CANDIDATE, "while True:\n    pass\n")
    assert spinning.outcome == "timeout", spinning


def test_the_label_of_each_way_to_end() -> None:
    limits = SandboxLimits(timeout_seconds=2, memory_mb=256)  # CPU: 2 s soft, 3 s hard

    def label(status: int, cpu: float = 0.1, rss: float = 20.0) -> str:
        ended = _Exit(status, -status if status < 0 else None, cpu, rss)
        return _why_it_ended(ended, limits)[0]

    assert label(0) == "exited_early"
    assert label(3) == "crashed"
    assert label(-signal.SIGKILL) == "killed_by_signal"
    assert label(-signal.SIGKILL, cpu=3.0) == "timeout"
    assert label(-signal.SIGKILL, rss=200.0) == "memory_limit"
    assert label(-signal.SIGKILL, rss=100.0) == "killed_by_signal"
    assert label(-signal.SIGXCPU, cpu=2.0) == "timeout"
    assert label(-signal.SIGXFSZ) == "file_size_limit"
    assert label(-signal.SIGSEGV, rss=250.0) == "killed_by_signal"  # only SIGKILL is the OOM's
    assert _why_it_ended(None, limits) == ("crashed", None)
    _, note = _killed_by(40, _Exit(-40, 40), limits)
    assert note == "was killed by a signal without a name (signal 40)"


def test_which_exit_statuses_are_signals() -> None:
    assert _signal_of(-9) == 9
    assert _signal_of(128 + 11) == 11  # a sandbox whose waiter was killed: bubblewrap's convention
    assert _signal_of(0) is None
    assert _signal_of(1) is None
    assert _signal_of(128) is None


def test_a_candidate_that_kills_its_waiter_fails_and_leaves_nothing() -> None:
    """The waiter (the candidate's parent inside its sandbox) is the sandbox's command: killing it
    ends the sandbox, the candidate with it, soon enough or after the tests failed."""
    candidate = (
        "import os, signal\ndef add(a, b):\n    return a - b\n"
        "os.kill(os.getppid(), signal.SIGKILL)\n"
    )
    report, _ = outcome_of(candidate)
    assert report.outcome in ("killed_by_signal", "tests_failed"), report
    # Without a sandbox (DIALAB_SANDBOX=none, for trusted code) the orphaned candidate is killed
    # with the process group but may not be gone yet; a sandbox's end waits for all it held.
    if report.isolation == "bubblewrap":
        assert sandboxed_processes() == []
