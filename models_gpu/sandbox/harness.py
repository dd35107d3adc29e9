"""Both sides of one sandboxed verification: the candidate's process and the tests' process.

``models_gpu.sandbox.runner`` runs this file twice, as ``python -I -S -B -c <this source> ROLE``,
each time in a sandbox of its own (``isolation.py``), and joins the two with a socket:

- ROLE ``candidate`` runs the model-written code, then answers requests about the objects it
  defined (call this, get that attribute, iterate that) until the socket closes;
- ROLE ``tests`` runs the task's tests. The candidate's names exist there only as stand-ins
  (``Remote``) whose every use is a request; the values that come back are plain data. At the end
  it writes the one report the parent reads, on a descriptor only it has.

Why two processes: the tests' process never runs a line of candidate code, so nothing the
candidate does to its own interpreter (patching ``ast``, builtins or ``AssertionError``, loading
native code, exiting early, printing a forged report, reading memory) reaches the assertions or
the report. What a candidate can influence is what its functions return, which is what a
solution is meant to control; and a returned object that is not plain data never compares equal
to plain data, so "an object equal to everything" fails.

Standard library only: the sandbox has no site-packages and no Dialab. The parent imports this
module too (the wire format is tested directly), so nothing runs at import.

Wire format: frames of a 4-byte big-endian length and a UTF-8 JSON object. Values are JSON
scalars or one-key objects naming their type: ``{"list": [...]}``, ``{"tuple": [...]}``,
``{"set": [...]}``, ``{"frozenset": [...]}``, ``{"dict": [[key, value], ...]}``,
``{"bytes": "hex"}``, ``{"complex": [real, imag]}``, and ``{"remote": n}`` for the candidate's
object number n. Arguments travel by value; a list, dict or set argument the candidate changed is
copied back into the tests' object after the call, so in-place functions can be tested.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import resource
import sys

# Every process of every verification imports this file: only what both sides need is imported
# here (``typing`` alone would cost milliseconds); ``ast``, ``traceback`` and ``linecache`` are
# imported where they are used.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from collections.abc import Callable, Iterator
    from typing import Any, TypeVar

    _T = TypeVar("_T")

MAX_FRAME_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 200
_TAIL_CHARS = 1500
_MAX_TESTS_REPORTED = 50
_SCALARS = (type(None), bool, int, float, str)
_MUTABLE_ARGUMENTS = (list, dict, set)
# The limits a failure can be blamed on, by the exception that shows it (exact types only).
LIMIT_CAUSES = frozenset({"exited_early", "memory_limit", "file_size_limit", "open_files_limit"})
# Exceptions a candidate may raise that the tests can catch as themselves.
_CATCHABLE = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, Exception)
}


# --- the wire ----------------------------------------------------------------------------------


class ProtocolError(Exception):
    """The other side sent something that is not a frame or a value of the wire format."""


class ChannelClosed(Exception):
    """The other side is gone."""


def send(fd: int, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME_BYTES:
        raise ValueError(f"a message of {len(data):,} bytes is over the {MAX_FRAME_BYTES:,} limit")
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def receive(fd: int) -> dict[str, Any]:
    length = int.from_bytes(_read_exactly(fd, 4), "big")
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"a frame of {length:,} bytes is over the {MAX_FRAME_BYTES:,} limit")
    try:
        message = json.loads(_read_exactly(fd, length).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise ProtocolError(f"a frame that is not JSON ({type(error).__name__})") from None
    if type(message) is not dict:
        raise ProtocolError("a frame that is not a JSON object")
    return message


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, missing = [], size
    while missing:
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def encode(value: Any, remember: Callable[[Any], int] | None = None, depth: int = 0) -> Any:
    """``value`` in the wire format; other objects become the number ``remember`` gives them."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} levels deep")
    if kind in (list, tuple, set, frozenset):
        return {kind.__name__: [encode(item, remember, depth + 1) for item in value]}
    if kind is dict:
        pairs = [
            [encode(k, remember, depth + 1), encode(v, remember, depth + 1)]
            for k, v in value.items()
        ]
        return {"dict": pairs}
    if kind is bytes:
        return {"bytes": value.hex()}
    if kind is complex:
        return {"complex": [value.real, value.imag]}
    if remember is not None:
        return {"remote": remember(value)}
    raise TypeError(f"a {kind.__name__} cannot cross the sandbox's boundary: only plain data can")


def decode(wire: Any, resolve: Callable[[int], Any], depth: int = 0) -> Any:
    """The value ``wire`` stands for; raises ProtocolError for anything else."""
    if type(wire) in _SCALARS:
        return wire
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested more than {MAX_DEPTH} levels deep")
    if type(wire) is not dict or len(wire) != 1:
        raise ProtocolError("a value that is neither a scalar nor a one-key object")
    ((tag, payload),) = wire.items()
    try:
        if tag in ("list", "tuple", "set", "frozenset") and type(payload) is list:
            items = [decode(item, resolve, depth + 1) for item in payload]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and type(payload) is list:
            pairs = [_pair(item) for item in payload]
            return {decode(k, resolve, depth + 1): decode(v, resolve, depth + 1) for k, v in pairs}
        if tag == "bytes" and type(payload) is str:
            return bytes.fromhex(payload)
        if tag == "complex" and type(payload) is list and len(payload) == 2:
            return complex(float(payload[0]), float(payload[1]))
        if tag == "remote" and type(payload) is int:
            return resolve(payload)
    except (TypeError, ValueError) as error:  # unhashable set items or keys, bad hex...
        raise ProtocolError(f"a malformed {tag!r} value ({error})") from None
    raise ProtocolError(f"an unknown value type {str(tag)[:40]!r}")


def _pair(item: Any) -> tuple[Any, Any]:
    if type(item) is not list or len(item) != 2:
        raise ProtocolError("a dict entry that is not a [key, value] pair")
    return item[0], item[1]


# --- shared by both sides ----------------------------------------------------------------------


def limit_cause(error: BaseException | None) -> str | None:
    """Which limit ``error`` reports, if any (exact types: subclasses are not limits)."""
    if type(error) is SystemExit:
        return "exited_early"
    if type(error) is MemoryError:
        return "memory_limit"
    if type(error) is OSError and error.errno == errno.EFBIG:  # Python ignores SIGXFSZ
        return "file_size_limit"
    if type(error) is OSError and error.errno == errno.EMFILE:
        return "open_files_limit"
    return None


def _set_limits(limits: dict[str, int]) -> None:
    """Bound this process before any untrusted code runs in it (or in the process beside it)."""
    megabyte = 1024 * 1024
    cpu = int(limits["cpu_seconds"])
    settings = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),
        (resource.RLIMIT_AS, limits["memory_mb"] * megabyte, limits["memory_mb"] * megabyte),
        (
            resource.RLIMIT_FSIZE,
            limits["file_size_mb"] * megabyte,
            limits["file_size_mb"] * megabyte,
        ),
        (resource.RLIMIT_NOFILE, limits["open_files"], limits["open_files"]),
        (resource.RLIMIT_CORE, 0, 0),
        # No new processes or threads: counted per user, so 0 refuses every fork and thread
        # for an unprivileged user whatever else that user runs.
        (resource.RLIMIT_NPROC, 0, 0),
    ]
    for which, soft, hard in settings:
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # A limit above the inherited hard limit cannot be raised: keep the stricter one.
            current = resource.getrlimit(which)[1]
            resource.setrlimit(which, (min(soft, current), current))


_SOURCES: dict[str, str] = {}


def _show_source(filename: str, source: str) -> None:
    """Let tracebacks quote the lines of ``filename`` (compiled from a string, so not on disk)."""
    _SOURCES[filename] = source


def _describe(error: BaseException, filenames: tuple[str, ...]) -> str:
    """ "Where and what": the traceback's lines in the candidate's or the tests' source only."""
    import linecache
    import traceback

    for filename, source in _SOURCES.items():
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    try:
        frames = [
            frame
            for frame in traceback.extract_tb(error.__traceback__)
            if frame.filename in filenames
        ]
        lines = traceback.format_list(frames[-12:])
        kind = type(error).__name__
        message = f"the code called exit({error})" if kind == "SystemExit" else str(error)
        lines.append(f"{kind}: {message}".rstrip(": "))
        return "".join(lines).strip()[-_TAIL_CHARS:]
    except BaseException:  # a candidate's __str__ may raise or misbehave
        return f"{type(error).__name__}: <message not shown>"


# --- the candidate's side ----------------------------------------------------------------------


def serve_candidate(job: dict[str, Any], channel: int) -> None:
    """Run the candidate's code, describe its names, then answer requests until the end."""
    objects: list[Any] = []

    def remember(value: Any) -> int:
        objects.append(value)
        return len(objects) - 1

    def resolve(number: int) -> Any:
        if not 0 <= number < len(objects):
            raise ProtocolError(f"no object number {number}")
        return objects[number]

    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    _show_source("<candidate>", job["candidate"])
    try:
        exec(compile(job["candidate"], "<candidate>", "exec"), namespace)
    except BaseException as error:
        send(
            channel,
            {
                "loaded": False,
                "error": _describe(error, ("<candidate>",)),
                "limit": limit_cause(error),
            },
        )
        return
    try:
        names = {
            name: encode(value, remember)
            for name, value in list(namespace.items())
            # Modules stay here: the tests import their own.
            if not name.startswith("__") and type(value) is not type(sys)
        }
        send(channel, {"loaded": True, "names": names})
    except (TypeError, ValueError) as error:
        message = f"the names the code defines cannot be sent to the tests: {error}"
        send(channel, {"loaded": False, "error": message, "limit": None})
        return
    while True:
        try:
            request = receive(channel)
        except ChannelClosed:
            return
        reply = _answer(request, resolve, remember)
        try:
            send(channel, reply)
        except ValueError as error:  # a value too large for one frame
            send(channel, {"raised": _raised(error)})


def _answer(
    request: dict[str, Any], resolve: Callable[[int], Any], remember: Callable[[Any], int]
) -> dict[str, Any]:
    try:
        target = resolve(request["target"])
        argument = decode(request.get("argument"), resolve)
        operation = request["op"]
        if operation == "call":
            args = decode(request["args"], resolve)
            kwargs = decode(request["kwargs"], resolve)
            result = target(*args, **kwargs)
            after = [encode(a, remember) if type(a) in _MUTABLE_ARGUMENTS else None for a in args]
            return {"value": encode(result, remember), "args_after": after}
        if operation == "next":
            try:
                return {"value": encode(next(target), remember)}
            except StopIteration:
                return {"stop": True}
        return {"value": encode(_OPERATIONS[operation](target, argument), remember)}
    except BaseException as error:
        return {"raised": _raised(error)}


def _setattr(target: Any, argument: list[Any]) -> None:
    setattr(target, argument[0], argument[1])


def _setitem(target: Any, argument: list[Any]) -> None:
    target[argument[0]] = argument[1]


def _delitem(target: Any, key: Any) -> None:
    del target[key]


def _compare(target: Any, argument: list[Any]) -> Any:
    operator, other = argument
    methods = {
        "eq": "__eq__",
        "ne": "__ne__",
        "lt": "__lt__",
        "le": "__le__",
        "gt": "__gt__",
        "ge": "__ge__",
    }
    return getattr(target, methods[operator])(other)


_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "getattr": getattr,
    "setattr": _setattr,
    "getitem": lambda target, key: target[key],
    "setitem": _setitem,
    "delitem": _delitem,
    "len": lambda target, _: len(target),
    "bool": lambda target, _: bool(target),
    "iter": lambda target, _: iter(target),
    "contains": lambda target, item: item in target,
    "repr": lambda target, _: repr(target),
    "str": lambda target, _: str(target),
    "hash": lambda target, _: hash(target),
    "compare": _compare,
    "type": lambda target, _: type(target).__name__,
}


def _raised(error: BaseException) -> dict[str, Any]:
    """What the tests' side needs to raise an equivalent exception."""
    catchable = next(
        (k.__name__ for k in type(error).__mro__ if _CATCHABLE.get(k.__name__) is k), None
    )
    try:
        message = str(error)[:_TAIL_CHARS]
    except BaseException:
        message = "<message not shown>"
    return {
        "type": type(error).__name__,
        "catchable_as": catchable,
        "message": message,
        "where": _describe(error, ("<candidate>",)),
        "limit": limit_cause(error),
    }


# --- the tests' side ---------------------------------------------------------------------------


class CandidateGone(BaseException):
    """The candidate's process exited, crashed or broke the protocol; no attempt passes after.

    A ``BaseException``, so a test's ``except Exception`` cannot swallow it.
    """


class _Connection:
    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.broken: str | None = None  # sticky: once set, the attempt has failed

    def request(self, operation: str, target: Remote, **fields: Any) -> dict[str, Any]:
        if self.broken is not None:
            raise CandidateGone(self.broken)
        try:
            send(
                self.fd,
                {"op": operation, "target": object.__getattribute__(target, "number"), **fields},
            )
            reply = receive(self.fd)
        except (ChannelClosed, OSError):
            raise self.fail("the candidate's process ended during a call") from None
        except ProtocolError as error:
            raise self.fail(f"the candidate's process broke the protocol: {error}") from None
        if "raised" in reply:
            raise self.rebuild(reply["raised"])
        return reply

    def value(self, operation: str, target: Remote, argument: Any = None) -> Any:
        reply = self.request(operation, target, argument=encode(argument, _remote_number))
        return self.decode(reply.get("value"))

    def decode(self, wire: Any) -> Any:
        try:
            return decode(wire, Remote)
        except ProtocolError as error:
            raise self.fail(f"the candidate's process broke the protocol: {error}") from None

    def fail(self, reason: str) -> CandidateGone:
        self.broken = self.broken or reason
        return CandidateGone(self.broken)

    def rebuild(self, raised: Any) -> BaseException:
        if type(raised) is not dict:
            return self.fail("the candidate's process broke the protocol: a malformed exception")
        kind, where = str(raised.get("type"))[:100], str(raised.get("where"))[-_TAIL_CHARS:]
        if raised.get("limit") == "exited_early":
            return self.fail(f"the code called exit() during a call\n{where}")
        exception_class = _CATCHABLE.get(str(raised.get("catchable_as")), CandidateError)
        message = str(raised.get("message"))[:_TAIL_CHARS]
        try:
            error = exception_class(message)
        except Exception:  # a builtin whose constructor wants other arguments
            error = CandidateError(message)
        if raised.get("limit") in LIMIT_CAUSES:
            error.candidate_limit = raised["limit"]  # type: ignore[attr-defined]
        error.add_note(f"raised in the candidate's code as {kind}:\n{where}")
        return error


class CandidateError(Exception):
    """The candidate's code raised an exception that is not one of Python's own."""


_CONNECTION: _Connection | None = None


def _connection() -> _Connection:
    if _CONNECTION is None:
        raise RuntimeError("no candidate to talk to")
    return _CONNECTION


def _remote_number(value: Any) -> int:
    """Encoding an argument: only the candidate's own objects may go back as references."""
    if type(value) is Remote:
        return int(object.__getattribute__(value, "number"))
    raise TypeError(
        f"a {type(value).__name__} cannot be passed to the candidate: only plain data can"
    )


class Remote:
    """Stands for one object of the candidate's; every use is a request to its process.

    It compares only with other remote objects (by the candidate's own rules), never with plain
    data, and supports what tests do with objects: calls, attributes, items, ``len``, ``in``,
    iteration, ``repr``/``str``, ``hash`` and truth. Arithmetic on it is a TypeError.
    """

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        object.__setattr__(self, "number", number)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_candidate(self, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _connection().value("getattr", self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        _connection().value("setattr", self, [name, value])

    def __getitem__(self, key: Any) -> Any:
        return _connection().value("getitem", self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        _connection().value("setitem", self, [key, value])

    def __delitem__(self, key: Any) -> None:
        _connection().value("delitem", self, key)

    def __len__(self) -> int:
        return _expect(_connection().value("len", self), int, "len()")

    def __bool__(self) -> bool:
        return _expect(_connection().value("bool", self), bool, "bool()")

    def __contains__(self, item: Any) -> bool:
        return _expect(_connection().value("contains", self, item), bool, "'in'")

    def __iter__(self) -> Iterator[Any]:
        iterator = _connection().value("iter", self)
        if type(iterator) is not Remote:
            raise TypeError("the candidate's iter() did not give an iterator")
        return iterator

    def __next__(self) -> Any:
        reply = _connection().request("next", self)
        if reply.get("stop") is True:
            raise StopIteration
        return _connection().decode(reply.get("value"))

    def __repr__(self) -> str:
        return _expect(_connection().value("repr", self), str, "repr()")

    def __str__(self) -> str:
        return _expect(_connection().value("str", self), str, "str()")

    def __hash__(self) -> int:
        return _expect(_connection().value("hash", self), int, "hash()")

    def _compare(self, operator: str, other: Any) -> Any:
        if type(other) is not Remote:
            return NotImplemented
        return _expect(
            _connection().value("compare", self, [operator, other]), bool, "a comparison"
        )

    def __eq__(self, other: object) -> Any:
        return self._compare("eq", other)

    def __ne__(self, other: object) -> Any:
        return self._compare("ne", other)

    def __lt__(self, other: Any) -> Any:
        return self._compare("lt", other)

    def __le__(self, other: Any) -> Any:
        return self._compare("le", other)

    def __gt__(self, other: Any) -> Any:
        return self._compare("gt", other)

    def __ge__(self, other: Any) -> Any:
        return self._compare("ge", other)


def _expect(value: Any, kind: type[_T], what: str) -> _T:
    if type(value) is not kind:
        raise TypeError(
            f"the candidate's {what} gave a {type(value).__name__}, not a {kind.__name__}"
        )
    return value


def call_candidate(function: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    connection = _connection()
    reply = connection.request(
        "call",
        function,
        args=encode(list(args), _remote_number),
        kwargs=encode(kwargs, _remote_number),
    )
    after = reply.get("args_after")
    if type(after) is list and len(after) == len(args):
        for original, wire in zip(args, after, strict=True):
            if type(original) in _MUTABLE_ARGUMENTS and wire is not None:
                _copy_into(original, connection.decode(wire))
    return connection.decode(reply.get("value"))


def _copy_into(original: Any, changed: Any) -> None:
    """Make the tests' argument look as the candidate left its copy (in place, same object)."""
    if type(original) is not type(changed):
        return
    if type(original) is list:
        original[:] = changed
    else:  # dict, set
        original.clear()
        original.update(changed)


def _plain_data_only(function: Remote) -> Callable[..., Any]:
    def candidate(*args: Any, **kwargs: Any) -> Any:
        value = call_candidate(function, args, kwargs)
        if _holds_remote(value, 0):
            raise TypeError(
                "the function returned an object that is not plain data; only numbers, strings, "
                "bytes, lists, tuples, dicts, sets and None are accepted"
            )
        return value

    return candidate


def _holds_remote(value: Any, depth: int) -> bool:
    if type(value) is Remote:
        return True
    if depth > MAX_DEPTH:
        return True
    if type(value) in (list, tuple, set, frozenset):
        return any(_holds_remote(item, depth + 1) for item in value)
    if type(value) is dict:
        return any(
            _holds_remote(k, depth + 1) or _holds_remote(v, depth + 1) for k, v in value.items()
        )
    return False


def run_test_suite(job: dict[str, Any], channel: int) -> dict[str, Any]:
    """Wait for the candidate to load, run every test against it, and say what happened."""
    global _CONNECTION
    connection = _CONNECTION = _Connection(channel)
    report: dict[str, Any] = {"loaded": False, "load_error": None, "limit": None, "tests": []}
    try:
        hello = receive(channel)
    except (ChannelClosed, OSError):
        report["candidate_failure"] = (
            "the candidate's process ended before its code finished loading"
        )
        return report
    except ProtocolError as error:
        report["candidate_failure"] = f"the candidate's process broke the protocol: {error}"
        return report
    if hello.get("loaded") is not True:
        report["load_error"] = str(hello.get("error"))[-_TAIL_CHARS:]
        limit = hello.get("limit")
        report["limit"] = limit if limit in LIMIT_CAUSES else None
        return report
    names = hello.get("names")
    if type(names) is not dict:
        report["candidate_failure"] = "the candidate's process broke the protocol: no names"
        return report
    candidate_names = {str(name): connection.decode(wire) for name, wire in names.items()}
    report["loaded"] = True
    report["tests"] = _run_tests(job["tests"], job.get("entry_point"), candidate_names)
    limits = [test.pop("limit") for test in report["tests"]]
    report["limit"] = next((limit for limit in limits if limit is not None), None)
    report["candidate_failure"] = connection.broken
    return report


def _run_tests(
    tests: str, entry_point: str | None, candidate_names: dict[str, Any]
) -> list[dict[str, Any]]:
    # The candidate's names, but none that would shadow a builtin the tests use: a candidate's
    # ``abs`` returning 0 would pass ``assert abs(f(x) - y) < 1e-6``. (The tests' own
    # definitions and imports run later, so they win over the candidate's names anyway.)
    namespace: dict[str, Any] = {
        name: value
        for name, value in candidate_names.items()
        if name == entry_point or not hasattr(builtins, name)
    }
    namespace.update(__name__="__tests__", __builtins__=builtins)
    if entry_point is not None:
        function = candidate_names.get(entry_point)
        if type(function) is not Remote:
            message = f"NameError: the code defines no function {entry_point!r}"
            return [{"name": "load", "passed": False, "error": message, "limit": None}]
        namespace[entry_point] = _plain_data_only(function)
    import ast

    _show_source("<tests>", tests)
    try:
        module = ast.parse(tests, "<tests>")
    except SyntaxError as error:
        message = f"the tests do not parse: {error}"
        return [{"name": "tests", "passed": False, "error": message, "limit": None}]

    results: list[dict[str, Any]] = []
    for statement in module.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), "<tests>", "exec")
        failure = _guarded(exec, code, namespace)
        if _asserts_something(statement):
            results.append(_outcome(_statement_name(tests, statement), failure))
        elif failure is not None:  # setup failed: everything after it would fail for that reason
            results.append(_outcome(f"line {statement.lineno}", failure))
            return results
    defined = [s.name for s in module.body if isinstance(s, ast.FunctionDef)]
    calls: list[tuple[str, tuple[Any, ...]]] = [(n, ()) for n in defined if n.startswith("test")]
    if "check" in defined and entry_point is not None:
        calls.append(("check", (namespace[entry_point],)))
    for name, args in calls:
        failure = _guarded(namespace[name], *args)
        label = f"{name}({', '.join('candidate' for _ in args)})"
        results.append(_outcome(label, failure))
    if not results:
        message = "the tests contain no assert, test_* function or check()"
        results.append({"name": "tests", "passed": False, "error": message, "limit": None})
    return results[:_MAX_TESTS_REPORTED]


def _guarded(function: Callable[..., Any], *args: Any) -> BaseException | None:
    try:
        function(*args)
    except BaseException as error:  # CandidateGone, SystemExit and KeyboardInterrupt: never a pass
        return error
    return None


def _outcome(name: str, error: BaseException | None) -> dict[str, Any]:
    limit = getattr(error, "candidate_limit", None) or limit_cause(error)
    return {
        "name": name[:200],
        "passed": error is None,
        "error": None if error is None else _describe_test_failure(error),
        "limit": limit,
    }


def _describe_test_failure(error: BaseException) -> str:
    text = _describe(error, ("<tests>",))
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list) and notes:
        text += "\n" + "\n".join(str(note) for note in notes)
    return text[-_TAIL_CHARS:]


def _asserts_something(statement: ast.stmt) -> bool:
    """A top-level assert, or a loop or block with asserts in it (``for x, y in cases: assert
    f(x) == y``): a test. Definitions are not: their asserts run when they are called."""
    import ast

    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    return any(isinstance(node, ast.Assert) for node in ast.walk(statement))


def _statement_name(tests: str, statement: ast.stmt) -> str:
    import ast

    segment = ast.get_source_segment(tests, statement) or ""
    return f"line {statement.lineno}: {segment.splitlines()[0] if segment else 'assert'}"


# --- the entry point ---------------------------------------------------------------------------


def main(role: str) -> None:
    """Read the job from stdin, bound this process, then play ``role``."""
    job: dict[str, Any] = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    _set_limits(job["limits"])
    channel = int(job["channel_fd"])
    if role == "candidate":
        serve_candidate(job, channel)
        return
    # The report goes to the stdout the parent reads; the tests' own prints go to stderr.
    report_fd = os.dup(1)
    os.dup2(2, 1)
    report = run_test_suite(job, channel)
    os.write(report_fd, json.dumps(report).encode("utf-8"))


if __name__ == "__main__":
    main(sys.argv[1])
