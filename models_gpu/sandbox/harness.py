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
``{"bytes": "hex"}``, ``{"complex": [real, imag]}``, ``{"int": "hex"}`` for an integer too long
for JSON's decimal digits (Python refuses to convert one of over 4,300 digits), ``{"builtin":
name}`` for one of Python's builtin classes or functions (``int``, ``len``: each side uses its
own, so ``f(items, int)`` works), and ``{"remote": n}`` for the candidate's object number n.
An instance of a subclass of a plain type (``Counter``, ``OrderedDict``, a ``namedtuple``, an
``IntEnum``) is a remote object, whose methods work; compared with plain data, or returned by
the entry point, it stands for its plain equivalent, which the ``plain`` request fetches.
Arguments travel by value; a list, dict or set argument the candidate changed is copied back into
the tests' object after the call, so in-place functions can be tested (see ``_AssertionScope``
for when).

How the tests' names are resolved, in this order, each overriding the one before: the
candidate's names (stand-ins), except those that would shadow a builtin and are not under test
(``_names_under_test``); the names the
candidate's module-level import statements bind, imported afresh here from its *source* (read,
never run), so a test relying on the candidate's ``import math`` gets the real module, not an
object the candidate bound to ``math``; the task's own code (a HumanEval prompt's helpers such as
``poly`` or ``encode_cyclic``), run here, so the candidate cannot replace what the tests call;
the entry point, always the candidate's; then the tests' own imports and definitions.
"""

from __future__ import annotations

import builtins
import errno
import json
import operator
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
    from types import FrameType
    from typing import Any, TypeVar

    _T = TypeVar("_T")

MAX_FRAME_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 200
_TAIL_CHARS = 1500
_MAX_TESTS_REPORTED = 50
_SCALARS = (type(None), bool, int, float, str)
_MUTABLE_ARGUMENTS = (list, dict, set)
# What an instance of a subclass of a plain type stands for, and how its plain value is taken
# without calling methods the subclass may override (dict.copy of a Counter is a plain dict).
_PLAIN_BASES: tuple[tuple[type, Callable[[Any], Any]], ...] = (
    (int, int.__index__),
    (float, float.__float__),
    (str, str.__str__),
    (bytes, bytes.__bytes__),
    (list, list.copy),
    (tuple, lambda value: tuple.__getitem__(value, slice(None))),
    (dict, dict.copy),
    (set, set.copy),
    (frozenset, frozenset.copy),
)
# Larger integers travel as hex: JSON writes decimal digits, which Python refuses past 4,300
# (int_max_str_digits); hex conversion is linear and not limited.
_BIG_INT_BITS = 4096
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
    if kind is int and value.bit_length() > _BIG_INT_BITS:
        return {"int": format(value, "x")}
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
    if _builtin_name(value) is not None:
        return {"builtin": value.__name__}
    if remember is not None:
        return {"remote": remember(value)}
    raise TypeError(f"a {kind.__name__} cannot cross the sandbox's boundary: only plain data can")


def decode(
    wire: Any, resolve: Callable[[int], Any], depth: int = 0, *, from_candidate: bool = False
) -> Any:
    """The value ``wire`` stands for; raises ProtocolError for anything else.

    ``from_candidate``: on the tests' side, a value the candidate sent: its NaNs become
    ``CandidateNaN``.
    """
    if type(wire) in _SCALARS:
        if from_candidate and type(wire) is float and wire != wire:
            return CandidateNaN()
        return wire
    if depth > MAX_DEPTH:
        raise ProtocolError(f"a value nested more than {MAX_DEPTH} levels deep")
    if type(wire) is not dict or len(wire) != 1:
        raise ProtocolError("a value that is neither a scalar nor a one-key object")
    ((tag, payload),) = wire.items()

    def inner(item: Any) -> Any:
        return decode(item, resolve, depth + 1, from_candidate=from_candidate)

    try:
        if tag in ("list", "tuple", "set", "frozenset") and type(payload) is list:
            items = [inner(item) for item in payload]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "dict" and type(payload) is list:
            pairs = [_pair(item) for item in payload]
            return {inner(k): inner(v) for k, v in pairs}
        if tag == "bytes" and type(payload) is str:
            return bytes.fromhex(payload)
        if tag == "complex" and type(payload) is list and len(payload) == 2:
            return complex(float(payload[0]), float(payload[1]))
        if tag == "int" and type(payload) is str:
            return int(payload, 16)
        if tag == "builtin" and type(payload) is str and _builtin_named(payload) is not None:
            return _builtin_named(payload)
        if tag == "remote" and type(payload) is int:
            return resolve(payload)
    except (TypeError, ValueError) as error:  # unhashable set items or keys, bad hex...
        raise ProtocolError(f"a malformed {tag!r} value ({error})") from None
    raise ProtocolError(f"an unknown value type {str(tag)[:40]!r}")


def _builtin_name(value: Any) -> str | None:
    """The name of ``value`` if it is one of Python's builtin classes or functions, else None."""
    if type(value) is str or type(value) is Remote:
        return None
    try:
        name = getattr(value, "__name__", None)
    except Exception:  # an object whose attributes misbehave: not a builtin, then
        return None
    return name if type(name) is str and _builtin_named(name) is value else None


def _builtin_named(name: str) -> Any:
    """The builtin class or function called ``name``, or None. Only classes that compare by
    identity: nothing that comes across the boundary this way can equal everything."""
    found = None if name.startswith("_") else getattr(builtins, name, None)
    if isinstance(found, type) and type(found).__eq__ is type.__eq__:
        return found
    return found if type(found) is type(len) else None


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


def _plain_equivalent(target: Any, _: Any) -> list[Any] | None:
    """[type name, plain value] for an instance of a subclass of a plain type, or for another
    integer type (numpy's ``int64``), else None."""
    for base, plain in _PLAIN_BASES:
        if isinstance(target, base):
            return [type(target).__name__[:100], plain(target)]
    import numbers

    if isinstance(target, numbers.Integral):
        return [type(target).__name__[:100], int(target)]
    return None


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
    "plain": _plain_equivalent,
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
            return decode(wire, Remote, from_candidate=True)
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
        if exception_class in (StopIteration, StopAsyncIteration):
            # PEP 479's rule for generators, for the same reason: raised out of a call, it would
            # end the tests' loop early, so all(map(f, cases)) would hold while f proved nothing.
            exception_class = RuntimeError
            message = f"the candidate's code raised {kind} out of a call (PEP 479)"
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


class CandidateNaN(float):
    """A NaN that came from the candidate, and what arithmetic on it gives: ordering it raises.

    ``not x > tol`` is true of every NaN, so a test written that way would pass an answer of
    NaN. Equality keeps float's rules (never equal), and ``math.isnan`` is true, so a test that
    expects NaN still passes.
    """

    def __new__(cls) -> CandidateNaN:
        return super().__new__(cls, "nan")

    def _refuse_order(self, other: object) -> bool:
        raise ValueError("the candidate's value is NaN, which cannot be ordered (<, <=, >, >=)")

    __lt__ = __le__ = __gt__ = __ge__ = _refuse_order


def _keeps_candidate_nan(operation: Callable[..., Any]) -> Callable[..., Any]:
    def apply(self: CandidateNaN, *other: Any) -> Any:
        result = operation(self, *other)
        if type(result) is float and result != result:
            return CandidateNaN()
        return result

    return apply


for _name in (
    *("__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__"),
    *("__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__"),
    *("__rpow__", "__neg__", "__pos__", "__abs__", "__round__"),
):
    setattr(CandidateNaN, _name, _keeps_candidate_nan(getattr(float, _name)))

# The subclasses of plain types whose values were compared as plain data, in the current test.
_CARRIED: set[str] = set()
_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


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

    def _compare(self, comparison: str, other: Any) -> Any:
        if type(other) is not Remote:
            # With plain data, only a plain equivalent compares, by the tests' own rules.
            plain = _plain_value_of(self)
            return NotImplemented if plain is None else _ORDERINGS[comparison](plain, other)
        return _expect(
            _connection().value("compare", self, [comparison, other]), bool, "a comparison"
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


def _plain_value_of(remote: Remote) -> Any:
    """What a candidate's instance of a subclass of a plain type (``Counter``, a namedtuple)
    stands for in plain data, fetched now (its methods may have changed it); None for any other
    object. The type is noted for the verdict: "compared as plain data"."""
    described = _connection().value("plain", remote)
    if described is None:
        return None
    if type(described) is not list or len(described) != 2 or type(described[0]) is not str:
        raise _connection().fail("the candidate's process broke the protocol: a bad plain value")
    _CARRIED.add(described[0][:100])
    return described[1]


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
                _copy_back(original, connection.decode(wire))
    return connection.decode(reply.get("value"))


class _AssertionScope:
    """Entered around each of the tests' asserts (``_ScopeAsserts``): while the assert's own
    expression is evaluated, an argument the candidate changed keeps its value from before the
    call, and takes the changed one when the assert ends.

    Without it, ``assert f(data) == sorted(data)`` would compare against the list as the
    candidate left it: emptying its argument and returning ``[]`` would pass. A call made as a
    statement of its own (``f(data)`` then ``assert data == [...]``: an in-place function) is
    copied back at once, and so is one made inside a function the assert calls (a test helper
    has its own asserts).
    """

    def __enter__(self) -> None:
        _SCOPES.append((sys._getframe(1), []))

    def __exit__(self, *exception: object) -> None:
        _frame, pending = _SCOPES.pop()
        for original, changed in pending:
            _copy_back(original, changed)


# Open assertion scopes, innermost last: the frame that runs the assert, and the copies it holds.
_SCOPES: list[tuple[FrameType, list[tuple[Any, Any]]]] = []


def _copy_back(original: Any, changed: Any) -> None:
    pending = _open_scope_of_this_call()
    if pending is None:
        _copy_into(original, changed)
    else:
        pending.append((original, changed))


def _open_scope_of_this_call() -> list[tuple[Any, Any]] | None:
    """The copies held by the innermost assertion scope, if this call is made by its expression
    (directly, or through a lambda or comprehension in it), else None."""
    if not _SCOPES:
        return None
    scope_frame, pending = _SCOPES[-1]
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame is scope_frame:
            return pending
        code = frame.f_code
        if code.co_filename == "<tests>" and not code.co_name.startswith("<"):
            return None  # a function of the tests', called from the assert
        frame = frame.f_back
    return None


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
        return _as_plain_data(call_candidate(function, args, kwargs), 0)

    return candidate


def _as_plain_data(value: Any, depth: int) -> Any:
    """``value`` with each of the candidate's objects replaced by its plain equivalent; a
    TypeError if one has none (an entry point's answer is plain data)."""
    if depth > MAX_DEPTH:
        raise TypeError(f"the function returned a value nested over {MAX_DEPTH} levels deep")
    if type(value) is Remote or _builtin_name(value) is not None:
        plain = _plain_value_of(value) if type(value) is Remote else None
        if plain is None:
            raise TypeError(
                "the function returned an object that is not plain data; only numbers, strings, "
                "bytes, lists, tuples, dicts, sets and None (and their subclasses, such as "
                "Counter or a namedtuple) are accepted"
            )
        return _as_plain_data(plain, depth + 1)
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(_as_plain_data(item, depth + 1) for item in value)
    if type(value) is dict:
        return {
            _as_plain_data(k, depth + 1): _as_plain_data(v, depth + 1) for k, v in value.items()
        }
    return value


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
    report["tests"] = _run_tests(
        job["tests"],
        job.get("entry_point"),
        candidate_names,
        imported=_imported_names(str(job.get("candidate_source") or "")),
        task_code=str(job.get("task_code") or ""),
    )
    limits = [test.pop("limit") for test in report["tests"]]
    report["limit"] = next((limit for limit in limits if limit is not None), None)
    report["candidate_failure"] = connection.broken
    return report


def _run_tests(
    tests: str,
    entry_point: str | None,
    candidate_names: dict[str, Any],
    *,
    imported: dict[str, Any],
    task_code: str,
) -> list[dict[str, Any]]:
    """Run each test; the names they see are resolved as the module docstring says."""
    import ast

    _show_source("<tests>", tests)
    try:
        module = ast.parse(tests, "<tests>")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        message = f"the tests do not parse: {type(error).__name__}: {error}"
        return [{"name": "tests", "passed": False, "error": message[:_TAIL_CHARS], "limit": None}]
    under_test = _names_under_test(module, candidate_names, entry_point)
    namespace: dict[str, Any] = {
        name: value
        for name, value in candidate_names.items()
        if name in under_test or not hasattr(builtins, name)
    }
    namespace.update(
        {name: value for name, value in imported.items() if name != entry_point},
        __name__="__tests__",
        __builtins__=builtins,
        __dialab_assertion_scope__=_AssertionScope,
    )
    task_failure = _run_task_code(task_code, entry_point, namespace)
    if task_failure is not None:
        return [_outcome("the task's own code", task_failure)]
    if entry_point is not None:
        function = candidate_names.get(entry_point)
        if type(function) is not Remote:
            message = f"NameError: the code defines no function {entry_point!r}"
            return [{"name": "load", "passed": False, "error": message, "limit": None}]
        namespace[entry_point] = _plain_data_only(function)
    _scope_asserts(module)
    asserting = _asserting_functions(module)

    results: list[dict[str, Any]] = []
    for statement in module.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), "<tests>", "exec")
        failure = _guarded(exec, code, namespace)
        if _asserts_something(statement, asserting):
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
    _CARRIED.clear()
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
        "error": None if error is None else _describe_test_failure(error) + _carried_note(),
        "limit": limit,
    }


def _names_under_test(
    tests: ast.Module, candidate_names: dict[str, Any], entry_point: str | None
) -> set[str]:
    """The candidate's names that the tests may see even where they shadow a builtin: the entry
    point; without one, the builtin-named functions the tests use when they use no other name of
    the candidate's (MBPP's task 126 asks for a function called ``sum``).

    Otherwise a shadowing name stays hidden: a candidate's ``abs`` returning 0 would pass
    ``assert abs(f(x) - y) < 1e-6``.
    """
    import ast

    if entry_point is not None:
        return {entry_point}
    used = {node.id for node in ast.walk(tests) if isinstance(node, ast.Name)}
    candidates_used = used & candidate_names.keys()
    if any(not hasattr(builtins, name) for name in candidates_used):
        return set()
    return candidates_used


def _carried_note() -> str:
    """Which of the candidate's values were compared as their plain equivalents, if any."""
    if not _CARRIED:
        return ""
    names = ", ".join(sorted(_CARRIED)[:5])
    return f"\n(the candidate's {names} values were compared as plain data)"


def _imported_names(source: str) -> dict[str, Any]:
    """What the module-level import statements of ``source`` bind, imported here, afresh.

    ``source`` is the candidate's: it is parsed, never run. An import that fails here (it failed
    or was guarded there too: only the standard library is in the sandbox) binds nothing.
    """
    import ast

    try:
        module = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}  # the candidate's side says why its code did not load
    names: dict[str, Any] = {}
    for statement in _module_level(module.body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                _bind_import(names, alias.asname, alias.name)
        elif isinstance(statement, ast.ImportFrom) and _absolute_module(statement):
            for alias in statement.names:
                _bind_from_import(names, str(statement.module), alias.name, alias.asname)
    return names


def _absolute_module(statement: ast.ImportFrom) -> bool:
    """``from x import y`` with x a module (not ``from . import y``, not ``__future__``)."""
    return statement.level == 0 and statement.module not in (None, "__future__")


def _module_level(statements: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run when a module is loaded: those in blocks too, not in functions."""
    import ast

    for statement in statements:
        yield statement
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level(getattr(statement, field, []))
        for handler in getattr(statement, "handlers", []):
            yield from _module_level(handler.body)


def _bind_import(names: dict[str, Any], alias: str | None, dotted: str) -> None:
    """``import a.b`` binds ``a``; ``import a.b as x`` binds ``x`` to ``a.b``."""
    import importlib

    try:
        module = importlib.import_module(dotted)
    except Exception:
        return
    if alias:
        names[alias] = module
    else:
        top = dotted.partition(".")[0]
        names[top] = sys.modules[top]


def _bind_from_import(
    names: dict[str, Any], module_name: str, name: str, alias: str | None
) -> None:
    import importlib

    try:
        module = importlib.import_module(module_name)
        if name == "*":
            public = getattr(module, "__all__", None) or [
                key for key in vars(module) if not key.startswith("_")
            ]
            names.update({str(key): getattr(module, key) for key in public})
        elif hasattr(module, name):
            names[alias or name] = getattr(module, name)
        else:  # a submodule: ``from os import path``
            names[alias or name] = importlib.import_module(f"{module_name}.{name}")
    except Exception:
        return


def _run_task_code(
    task_code: str, entry_point: str | None, namespace: dict[str, Any]
) -> BaseException | None:
    """Run the task's own code here, all of it but the entry point's definition (the candidate's
    completes it). A prefix that does not parse on its own (a bare ``def f(x):``) is skipped:
    then only the candidate's copy of it exists."""
    import ast

    _show_source("<task code>", task_code)
    try:
        module = ast.parse(task_code, "<task code>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    module.body = [
        statement
        for statement in module.body
        if not (
            isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            and statement.name == entry_point
        )
    ]
    return _guarded(exec, compile(module, "<task code>", "exec"), namespace)


def _scope_asserts(module: ast.Module) -> None:
    """Put each ``assert`` of the tests in ``with __dialab_assertion_scope__():``."""
    import ast

    def scoped(statement: ast.stmt) -> ast.stmt:
        if not isinstance(statement, ast.Assert):
            return statement
        scope = ast.Call(ast.Name("__dialab_assertion_scope__", ast.Load()), [], [])
        return ast.copy_location(ast.With([ast.withitem(scope)], [statement]), statement)

    for node in ast.walk(module):
        for field in ("body", "orelse", "finalbody"):
            statements = getattr(node, field, None)
            if isinstance(statements, list):
                setattr(node, field, [scoped(statement) for statement in statements])
    ast.fix_missing_locations(module)


def _describe_test_failure(error: BaseException) -> str:
    text = _describe(error, ("<tests>",))
    notes = getattr(error, "__notes__", None)
    if isinstance(notes, list) and notes:
        text += "\n" + "\n".join(str(note) for note in notes)
    return text[-_TAIL_CHARS:]


def _asserts_something(statement: ast.stmt, asserting: set[str]) -> bool:
    """A top-level assert, a loop or block with asserts in it (``for x, y in cases: assert
    f(x) == y``), or one that calls a function of the tests' that asserts (MBPP+'s ``for inp,
    exp in ...: assertion(f(*inp), exp, 0)``): a test. Definitions are not: their asserts run
    when they are called."""
    import ast

    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return False
    return _asserts_in(statement, asserting)


def _asserting_functions(module: ast.Module) -> set[str]:
    """The tests' top-level functions that assert, themselves or through one another."""
    import ast

    functions = [s for s in module.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    asserting: set[str] = set()
    while True:
        more = {f.name for f in functions if f.name not in asserting and _asserts_in(f, asserting)}
        if not more:
            return asserting
        asserting |= more


def _asserts_in(node: ast.AST, asserting: set[str]) -> bool:
    import ast

    return any(
        isinstance(inner, ast.Assert)
        or (
            isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id in asserting
        )
        for inner in ast.walk(node)
    )


def _statement_name(tests: str, statement: ast.stmt) -> str:
    import ast

    segment = ast.get_source_segment(tests, statement) or ""
    return f"line {statement.lineno}: {segment.splitlines()[0] if segment else 'assert'}"


# --- the entry point ---------------------------------------------------------------------------


def main(role: str) -> None:
    """Read the job from stdin, bound this process, then play ``role``."""
    job: dict[str, Any] = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    # Integers of any size, as in the tests' literals (MBPP+ has results of over 4,300 digits):
    # the limit guards servers against slow conversions; here the CPU limit bounds them.
    if hasattr(sys, "set_int_max_str_digits"):  # Python 3.11, and patched 3.7 to 3.10
        sys.set_int_max_str_digits(0)
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
