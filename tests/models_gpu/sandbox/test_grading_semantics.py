"""What the tests see of the candidate, so that only the tests decide a grade.

Each case is a correct answer that must pass and a wrong one that passed before these rules.
"""

from __future__ import annotations

import pytest

from models_gpu.sandbox import SandboxLimits, harness, run_tests

FAST = SandboxLimits(timeout_seconds=2, memory_mb=256)


def run(candidate: str, tests: str, entry_point: str | None = None, task_code: str = ""):
    return run_tests(candidate, tests, entry_point=entry_point, task_code=task_code, limits=FAST)


# --- names the tests rely on ------------------------------------------------------------------

# MBPP's tests use the solution's `import math` without importing it themselves.
AREA_TESTS = "assert math.isclose(area(2), 12.566, rel_tol=0.001)\n"


def test_a_module_the_candidate_imported_is_the_real_module_in_the_tests() -> None:
    honest = "import math\n\ndef area(r):\n    return math.pi * r * r\n"
    report = run(honest, AREA_TESTS, "area")
    assert report.passed, report


def test_an_object_the_candidate_bound_to_a_module_name_is_not_what_the_tests_see() -> None:
    fake = (
        "import math\n\nclass Anything:\n    def isclose(self, *a, **k):\n        return True\n\n"
        "math = Anything()\n\ndef area(r):\n    return 0\n"
    )
    report = run(fake, AREA_TESTS, "area")
    assert report.outcome == "tests_failed"


def test_from_imports_aliases_and_dotted_imports_are_imported_afresh() -> None:
    candidate = (
        "import os.path\nimport collections as c\nfrom fractions import Fraction as F\n"
        "try:\n    from math import gcd\nexcept ImportError:\n    pass\n\n"
        "def half(x):\n    return x / 2\n"
    )
    tests = (
        "assert os.path.join('a', 'b') == 'a/b'\n"
        "assert c.Counter('aab')['a'] == 2\n"
        "assert gcd(4, 6) == 2\n"
        "assert half(3) == F(3, 2)\n"
    )
    report = run(candidate, tests, "half")
    assert report.passed, report


def test_the_entry_point_stays_the_candidates_even_if_it_is_an_imported_name() -> None:
    # A candidate whose entry point is a standard-library function it imported is graded on it
    # (through the boundary), not on the tests' own import of the same name.
    report = run("from math import gcd\n", "assert gcd(4, 6) == 2\n", "gcd")
    assert report.passed, report


HELPER = "def encode(s):\n    return s[::-1]\n\ndef decode(s):\n    '''Undo encode.'''\n"
HELPER_TESTS = "def check(candidate):\n    assert candidate(encode('abc')) == 'abc'\n"


def test_the_tasks_own_helpers_run_on_the_tests_side() -> None:
    honest = HELPER + "    return s[::-1]\n"
    assert run(honest, HELPER_TESTS, "decode", task_code=HELPER).passed


def test_a_candidate_that_redefines_the_tasks_helper_fails() -> None:
    cheat = HELPER + "    return s\n\ndef encode(s):\n    return s\n"
    report = run(cheat, HELPER_TESTS, "decode", task_code=HELPER)
    assert report.outcome == "tests_failed"


def test_task_code_that_does_not_parse_alone_is_left_to_the_candidates_copy() -> None:
    prefix = "def add(a, b):\n"
    report = run(prefix + "    return a + b\n", "assert add(1, 2) == 3\n", "add", task_code=prefix)
    assert report.passed, report


def test_task_code_that_fails_is_reported() -> None:
    # The candidate was given this code too, so it would fail to load first; here it is given
    # only to the tests' side, as a task whose helpers fail there would.
    prefix = "raise ValueError('broken task')\n"
    report = run("def f():\n    return 1\n", "assert f() == 1\n", "f", task_code=prefix)
    assert report.outcome == "tests_failed"
    assert report.tests[0].name == "the task's own code"
    assert "broken task" in (report.tests[0].error or "")


# --- Python semantics that let a wrong answer pass --------------------------------------------


def test_a_stop_iteration_out_of_a_call_is_an_error_not_the_end_of_the_loop() -> None:
    cheat = "def is_even(n):\n    raise StopIteration\n"
    report = run(cheat, "assert all(map(is_even, [1, 2, 3]))\n", "is_even")
    assert report.outcome == "tests_failed"
    assert "StopIteration" in (report.tests[0].error or "")
    assert "RuntimeError" in (report.tests[0].error or "")


def test_a_candidates_generator_still_ends_loops() -> None:
    candidate = "def upto(n):\n    yield from range(n)\n"
    assert run(candidate, "assert list(upto(3)) == [0, 1, 2]\n").passed


def test_a_nan_answer_does_not_pass_a_negated_tolerance_check() -> None:
    cheat = "def root(x):\n    return float('nan')\n"
    tests = "assert not abs(root(4) - 2) > 1e-6\nassert not root(4) - 2 > 1e-6\n"
    report = run(cheat, tests, "root")
    assert [t.passed for t in report.tests] == [False, False]
    assert "NaN" in (report.tests[0].error or "")


def test_a_nan_the_tests_expect_still_passes() -> None:
    candidate = "def undefined():\n    return float('nan')\n"
    tests = "import math\nassert math.isnan(undefined())\nassert undefined() != undefined()\n"
    assert run(candidate, tests, "undefined").passed


def test_an_argument_emptied_by_the_candidate_is_not_what_the_assert_compares_with() -> None:
    cheat = "def my_sort(items):\n    items.clear()\n    return []\n"
    report = run(cheat, "data = [3, 1, 2]\nassert my_sort(data) == sorted(data)\n", "my_sort")
    assert report.outcome == "tests_failed"


def test_in_place_functions_are_still_seen_changing_their_argument() -> None:
    candidate = "def sort_in_place(items):\n    items.sort()\n"
    tests = (
        "data = [3, 1, 2]\nsort_in_place(data)\nassert data == [1, 2, 3]\n"
        "def test_helper():\n    more = [2, 1]\n    sort_in_place(more)\n"
        "    assert more == [1, 2]\n"
        "def check_sorted(values):\n    sort_in_place(values)\n"
        "    return values == sorted(values)\n"
        "assert check_sorted([5, 4])\n"
    )
    report = run(candidate, tests, "sort_in_place")
    assert report.passed, report


def test_after_the_assert_the_argument_shows_the_candidates_change() -> None:
    candidate = "def pop_last(items):\n    return items.pop()\n"
    tests = "data = [1, 2]\nassert pop_last(data) == 2 and data == [1, 2]\nassert data == [1]\n"
    assert run(candidate, tests, "pop_last").passed


# --- correct code that was graded wrong -------------------------------------------------------


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (
            "from collections import Counter\ndef f():\n    return Counter('aab')",
            "{'a': 2, 'b': 1}",
        ),
        (
            "from collections import OrderedDict\ndef f():\n    return OrderedDict(a=1)",
            "{'a': 1}",
        ),
        ("from collections import defaultdict\ndef f():\n    return defaultdict(int)", "{}"),
        (
            "from collections import namedtuple\nP = namedtuple('P', 'x y')\n"
            "def f():\n    return [P(1, 2)]",
            "[(1, 2)]",
        ),
        ("import enum\nclass C(enum.IntEnum):\n    RED = 1\ndef f():\n    return C.RED", "1"),
        ("class S(str):\n    pass\ndef f():\n    return S('x')", "'x'"),
        ("def f():\n    return 7 ** 6000", "7 ** 6000"),
    ],
)
def test_subclasses_of_plain_types_and_huge_integers_are_carried_as_plain_data(
    candidate: str, expected: str
) -> None:
    report = run(candidate + "\n", f"assert f() == {expected}\n", "f")
    assert report.passed, report


def test_a_huge_integer_travels_to_the_candidate_too() -> None:
    report = run("def succ(n):\n    return n + 1\n", "assert succ(10 ** 5000) == 10 ** 5000 + 1\n")
    assert report.passed, report


def test_a_failure_says_which_subclass_was_compared_as_plain_data() -> None:
    candidate = "from collections import Counter\ndef f():\n    return Counter('ab')\n"
    report = run(candidate, "assert f() == {'a': 2}\n", "f")
    assert report.outcome == "tests_failed"
    assert "Counter" in (report.tests[0].error or "")


def test_a_candidates_subclass_of_a_plain_type_keeps_its_methods() -> None:
    candidate = (
        "class Stack(list):\n    def push(self, x):\n        self.append(x)\n"
        "    def peek(self):\n        return self[-1]\n"
    )
    tests = "s = Stack()\ns.push(1)\ns.push(2)\nassert s.peek() == 2\nassert s == [1, 2]\n"
    report = run(candidate, tests)
    assert report.passed, report


def test_an_object_with_no_plain_equivalent_still_never_equals_plain_data() -> None:
    candidate = "class Box:\n    def __eq__(self, other):\n        return True\n\nbox = Box()\n"
    report = run(candidate, "assert box == 1\nassert [box] == [1]\n")
    assert [t.passed for t in report.tests] == [False, False]


def test_the_wire_format_carries_big_integers_as_hex() -> None:
    big = -(3**20000)
    assert harness.encode(big) == {"int": format(big, "x")}
    assert harness.decode(harness.encode(big), lambda n: None) == big


# MBPP+'s tests: inputs and results, and an assertion helper that a loop calls.
ASSERTION_HELPER_TESTS = """
import math

def close_enough(out, exp, tolerance):
    if tolerance:
        assert math.isclose(out, exp, abs_tol=tolerance)
    else:
        assert out == exp

def assertion(out, exp, tolerance):
    close_enough(out, exp, tolerance)

inputs = [[1, 2], [3, 4], [10, -10]]
results = [3, 7, 0]
for inp, exp in zip(inputs, results):
    assertion(add(*inp), exp, 0)
"""


def test_a_loop_that_calls_the_tests_own_assertion_helper_is_a_test() -> None:
    report = run("def add(a, b):\n    return a + b\n", ASSERTION_HELPER_TESTS, "add")
    assert report.passed, report
    assert len(report.tests) == 1 and report.tests[0].name.startswith("line 15: for inp")
    wrong = run("def add(a, b):\n    return a * b\n", ASSERTION_HELPER_TESTS, "add")
    assert wrong.outcome == "tests_failed"


def test_the_tests_may_hold_integer_literals_of_any_size() -> None:
    literal = "1" + "0" * 5000  # 10 ** 5000: over Python's default limit of 4,300 digits
    report = run("def f():\n    return 10 ** 5000\n", f"assert f() == {literal}\n", "f")
    assert report.passed, report


# --- what may cross besides plain data ---------------------------------------------------------


def test_builtin_classes_and_functions_cross_both_ways() -> None:
    candidate = (
        "def remove_type(items, kind):\n    return [x for x in items if not isinstance(x, kind)]\n"
        "def kind_of(x):\n    return type(x)\n"
        "def apply(function, value):\n    return function(value)\n"
    )
    tests = (
        "assert remove_type((4, 5, 7.7, 'a'), int) == [7.7, 'a']\n"
        "assert remove_type((4, 'a'), str) == [4]\n"
        "assert kind_of(3) is int\n"
        "assert apply(len, [1, 2]) == 2\n"
    )
    report = run(candidate, tests)
    assert report.passed, report


def test_an_entry_point_that_returns_a_class_is_not_plain_data() -> None:
    report = run("def f():\n    return int\n", "assert f() == int\n", "f")
    assert report.outcome == "tests_failed"
    assert "not plain data" in (report.tests[0].error or "")


@pytest.mark.parametrize("name", ["_io", "True", "__import__", "nonexistent", "Ellipsis"])
def test_only_builtin_classes_and_functions_are_taken_by_name(name: str) -> None:
    with pytest.raises(harness.ProtocolError):
        harness.decode({"builtin": name}, lambda n: None)


def test_builtin_names_map_to_the_builtins_themselves() -> None:
    assert harness.decode({"builtin": "int"}, lambda n: None) is int
    assert harness.decode({"builtin": "len"}, lambda n: None) is len
    assert harness.encode(ValueError) == {"builtin": "ValueError"}
    with pytest.raises(TypeError):  # a function of the tests' own is not plain data
        harness.encode(test_builtin_names_map_to_the_builtins_themselves)


def test_a_function_named_like_a_builtin_is_the_one_under_test_when_the_tests_use_no_other() -> (
    None
):
    # MBPP's task 126 asks for a function called ``sum``.
    candidate = "def sum(a, b):\n    return a + b\n"
    assert run(candidate, "assert sum(2, 3) == 5\n").passed
    assert run("def sum(a, b):\n    return a * b\n", "assert sum(2, 3) == 5\n").outcome == (
        "tests_failed"
    )


def test_a_builtin_named_helper_stays_hidden_when_the_tests_call_the_candidates_function() -> None:
    cheat = "def abs(x):\n    return 0\n\ndef root(x):\n    return 7\n"
    report = run(cheat, "assert abs(root(4) - 2) < 1e-6\n")
    assert report.outcome == "tests_failed"
