"""The child side of the sandbox: run untrusted candidate code, then its tests, report once.

Run as a script (``python -I -S harness.py < job.json``) by ``models_gpu.sandbox.runner``; it
imports only the standard library and nothing from Dialab, so ``-I -S`` (no site-packages, no
script directory on ``sys.path``) is enough for it.

Order matters, and everything before "candidate code runs" is trusted:

1. read the job (the parent's file on stdin), move the result file descriptor to an unguessable
   number and close stdin;
2. set the resource limits (here rather than in a ``preexec_fn``: the parent may be a threaded
   Django server, where ``preexec_fn`` can deadlock, and no untrusted code has run yet);
3. capture every function the reporting path needs (C functions on immutable builtin types:
   ``os.write``, ``_json.encode_basestring_ascii``, ``str.join``), because candidate code can
   rebind anything reachable by name;
4. install an audit hook that refuses file access outside the sandbox (reads of the standard
   library excepted), sockets, processes, signals to other processes, ctypes, frame and heap
   introspection, tracing and new audit hooks. A refused operation raises in the candidate and
   is also remembered, so catching the exception does not hide it;
5. run the candidate in its own namespace; then, with builtins and module dictionaries restored
   to their state before the candidate, run the tests in a fresh namespace that sees the
   candidate's names, the entry point wrapped so that it returns plain data only (an object whose
   ``__eq__`` always says True would otherwise pass every ``assert f(x) == y``);
6. write one line of JSON carrying the parent's nonce to the result descriptor. The nonce lives
   only in ``main``'s locals, which candidate code cannot reach without the introspection the hook
   refuses; without it the parent ignores whatever was written, so an early ``sys.exit(0)`` or a
   forged line is a failure, never a pass.
"""

from __future__ import annotations

import ast
import builtins
import errno
import json
import os
import random
import resource
import sys
from collections.abc import Callable
from typing import Any

_TAIL_CHARS = 1500
_MAX_TESTS_REPORTED = 50
# Names whose import is refused outright: process creation and raw memory access.
_FORBIDDEN_IMPORTS = frozenset(
    {"ctypes", "_ctypes", "_posixsubprocess", "subprocess", "multiprocessing", "pty", "socket"}
)
# Audit events refused whatever their arguments.
_FORBIDDEN_EVENTS = frozenset(
    {
        "os.system",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.spawn",
        "os.startfile",
        "subprocess.Popen",
        "pty.spawn",
        "sys._getframe",
        "sys._current_frames",
        "sys.setprofile",
        "sys.settrace",
        "sys.addaudithook",
        "object.__getattr__",  # tb_frame, gi_frame, f_back...: the way to main()'s locals
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "signal.pthread_kill",
        "os.setuid",
        "os.chroot",
        "mmap.__new__",
        "code.__new__",
        "function.__new__",
        "cpython.run_interactivehook",
    }
)
_FORBIDDEN_PREFIXES = ("socket.", "ctypes.", "os.exec", "os.spawn", "winreg.", "_winapi.")
# Events whose first one or two arguments are paths that must lie inside the sandbox.
_PATH_EVENTS = frozenset(
    {
        "os.listdir",
        "os.scandir",
        "os.remove",
        "os.rmdir",
        "os.mkdir",
        "os.rename",
        "os.link",
        "os.symlink",
        "os.chmod",
        "os.chown",
        "os.truncate",
        "os.utime",
        "os.chdir",
        "os.chflags",
        "shutil.rmtree",
    }
)
_PLAIN_TYPES = (type(None), bool, int, float, complex, str, bytes)


class ForbiddenOperation(PermissionError):
    """Raised inside the candidate when the audit hook refuses an operation."""


def main() -> None:
    job: dict[str, Any] = json.loads(sys.stdin.read())
    nonce: str = job["nonce"]
    result_fd = _hide_fd(int(job["result_fd"]))
    _replace_stdin()
    _set_limits(job["limits"])

    write, encode = os.write, _encoder()
    violations: list[str] = []
    trusted = _arm_audit_hook(job["sandbox_dir"], job["stdlib_dirs"], violations)
    # Candidate code must not reach the harness's globals through sys.modules["__main__"].
    sys.modules.pop("__main__", None)
    threads_before = _thread_count()

    describe = _Describer(
        {"<candidate>": job["candidate"], "<tests>": job["tests"]}, trusted
    ).describe
    report = _run(job["candidate"], job["tests"], job.get("entry_point"), describe)
    if _thread_count() != threads_before:
        violations.append("threading: the candidate started threads")
    report["violations"] = violations[:10]
    report["nonce"] = nonce
    line = encode(report) + "\n"
    write(result_fd, line.encode("ascii"))


Describe = Callable[[BaseException], str]


def _run(candidate: str, tests: str, entry_point: str | None, describe: Describe) -> dict[str, Any]:
    snapshot = _Snapshot()
    candidate_globals: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    load_error = _exec_guarded(candidate, "<candidate>", candidate_globals)
    snapshot.restore()
    report: dict[str, Any] = {"loaded": load_error is None, "load_error": None, "tests": []}
    if load_error is not None:
        report["load_error"] = describe(load_error)
        report["limit"] = _cause(load_error)
        return report
    report["tests"] = _run_tests(tests, entry_point, candidate_globals, snapshot, describe)
    limits_hit = [t.pop("limit") for t in report["tests"]]
    report["limit"] = next((limit for limit in limits_hit if limit is not None), None)
    return report


def _cause(error: BaseException | None) -> str | None:
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


def _run_tests(
    tests: str,
    entry_point: str | None,
    candidate_globals: dict[str, Any],
    snapshot: _Snapshot,
    describe: Describe,
) -> list[dict[str, Any]]:
    # A fresh namespace: the tests' own definitions (``check``...) are made after, and so win
    # over, anything of the same name the candidate defined.
    namespace = {k: v for k, v in candidate_globals.items() if not k.startswith("__")}
    namespace.update(__name__="__tests__", __builtins__=builtins)
    if entry_point is not None:
        function = candidate_globals.get(entry_point)
        if function is None or not callable(function):
            message = f"NameError: the code defines no function {entry_point!r}"
            return [{"name": "load", "passed": False, "error": message, "limit": None}]
        namespace[entry_point] = _plain_data_only(function, snapshot)
    try:
        module = ast.parse(tests, "<tests>")
    except SyntaxError as error:
        message = f"the tests do not parse: {error}"
        return [{"name": "tests", "passed": False, "error": message, "limit": None}]

    results: list[dict[str, Any]] = []
    for statement in module.body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), "<tests>", "exec")
        failure = _exec_guarded(code, "<tests>", namespace)
        snapshot.restore()
        if isinstance(statement, ast.Assert):
            results.append(_outcome(_statement_name(tests, statement), failure, describe))
        elif failure is not None:  # setup failed: everything after it would fail for that reason
            results.append(_outcome(f"line {statement.lineno}", failure, describe))
            return results
    defined = [s.name for s in module.body if isinstance(s, ast.FunctionDef)]
    calls: list[tuple[str, tuple[Any, ...]]] = [(n, ()) for n in defined if n.startswith("test")]
    if "check" in defined and entry_point is not None:
        calls.append(("check", (namespace[entry_point],)))
    for name, args in calls:
        failure = _call_guarded(namespace[name], args)
        snapshot.restore()
        label = f"{name}({', '.join('candidate' for _ in args)})"
        results.append(_outcome(label, failure, describe))
    if not results:
        message = "the tests contain no assert, test_* function or check()"
        results.append({"name": "tests", "passed": False, "error": message, "limit": None})
    return results[:_MAX_TESTS_REPORTED]


def _call_guarded(function: Callable[..., Any], args: tuple[Any, ...]) -> BaseException | None:
    try:
        function(*args)
    except BaseException as error:  # SystemExit and KeyboardInterrupt too: never a pass
        return error
    return None


def _exec_guarded(source: Any, filename: str, namespace: dict[str, Any]) -> BaseException | None:
    try:
        code = compile(source, filename, "exec") if isinstance(source, str) else source
        exec(code, namespace)
    except BaseException as error:
        return error
    return None


class _Describer:
    """Turn an exception into "where and what" text without running any candidate code.

    ``str(error)`` could call a candidate-defined ``__str__`` while the audit hook trusts the
    harness (reading ``tb_frame`` needs that), so only exact builtin types are formatted: the
    type's name straight from ``type``'s own descriptor, plain-data arguments, and the lines of
    the candidate and the tests the traceback passes through.
    """

    def __init__(self, sources: dict[str, str], trusted: Callable[[bool], None]) -> None:
        self._lines = {name: text.splitlines() for name, text in sources.items()}
        self._trusted = trusted
        self._type_name = type.__dict__["__name__"].__get__

    def describe(self, error: BaseException) -> str:
        kind = type(error)
        name = str(self._type_name(kind, type))
        arguments = error.args if type(error.args) is tuple else ()
        if all(_is_plain(argument, depth=0) for argument in arguments):
            message = ", ".join(str(argument) for argument in arguments)
        else:
            message = "<arguments not shown>"
        if kind is SystemExit:
            message = f"the code called exit({message})"
        lines = [*self._where(error.__traceback__), f"{name}: {message}".rstrip(": ")]
        return "\n".join(lines)[-_TAIL_CHARS:]

    def _where(self, trace: Any) -> list[str]:
        where: list[str] = []
        self._trusted(True)
        try:
            while trace is not None and type(trace).__name__ == "traceback":
                code = trace.tb_frame.f_code
                filename, line_number = code.co_filename, trace.tb_lineno
                source = self._lines.get(filename)
                if source is not None and type(line_number) is int:
                    text = source[line_number - 1].strip() if line_number <= len(source) else ""
                    where.append(f'  File "{filename}", line {line_number}, in {code.co_name}')
                    if text:
                        where.append(f"    {text}")
                trace = trace.tb_next
        finally:
            self._trusted(False)
        return where[-12:]


def _outcome(name: str, error: BaseException | None, describe: Describe) -> dict[str, Any]:
    return {
        "name": name[:200],
        "passed": error is None,
        "error": None if error is None else describe(error),
        "limit": _cause(error),
    }


def _statement_name(tests: str, statement: ast.stmt) -> str:
    segment = ast.get_source_segment(tests, statement) or ""
    return f"line {statement.lineno}: {segment.splitlines()[0] if segment else 'assert'}"


def _plain_data_only(function: Callable[..., Any], snapshot: _Snapshot) -> Callable[..., Any]:
    def candidate(*args: Any, **kwargs: Any) -> Any:
        try:
            value = function(*args, **kwargs)
        finally:
            snapshot.restore()  # whatever the call patched, the assertion sees the original
        if not _is_plain(value, depth=0):
            raise TypeError(
                f"the function returned a {type(value).__name__}; only plain data "
                "(numbers, strings, lists, tuples, dicts, sets, None) is accepted"
            )
        return value

    return candidate


def _is_plain(value: Any, *, depth: int) -> bool:
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if depth > 20:
        return False
    if kind in (list, tuple, set, frozenset):
        return all(_is_plain(item, depth=depth + 1) for item in value)
    if kind is dict:
        return all(
            _is_plain(key, depth=depth + 1) and _is_plain(item, depth=depth + 1)
            for key, item in value.items()
        )
    return False


class _Snapshot:
    """Builtins and every loaded module's dictionary, as they were before the candidate ran."""

    def __init__(self) -> None:
        self._live_modules = sys.modules  # the dict object itself: ``sys.modules = {}`` is undone
        self._modules = dict(sys.modules)
        self._namespaces = {
            name: namespace
            for name, module in self._modules.items()
            if type(namespace := getattr(module, "__dict__", None)) is dict
        }
        self._saved = {name: dict(namespace) for name, namespace in self._namespaces.items()}
        self._builtins, self._saved_builtins = vars(builtins), dict(vars(builtins))
        self._clear, self._update = dict.clear, dict.update

    def restore(self) -> None:
        # Builtins first, through captured references: the rest of this method uses them.
        self._clear(self._builtins)
        self._update(self._builtins, self._saved_builtins)
        for name in [name for name in self._live_modules if name not in self._modules]:
            del self._live_modules[name]  # the tests re-import a fresh copy of these
        self._update(self._live_modules, self._modules)
        for name, namespace in self._namespaces.items():
            self._clear(namespace)
            self._update(namespace, self._saved[name])


def _arm_audit_hook(
    sandbox_dir: str, stdlib_dirs: list[str], violations: list[str]
) -> Callable[[bool], None]:
    """Install the hook; return the switch that lets the harness read tracebacks' frames."""
    root = os.path.realpath(sandbox_dir) + os.sep
    readable = tuple(os.path.realpath(path) + os.sep for path in stdlib_dirs)
    realpath, fspath, getpid = os.path.realpath, os.fspath, os.getpid
    own_pid = getpid()
    trusted = [False]

    def set_trusted(value: bool) -> None:
        trusted[0] = value

    def inside(path: object, roots: tuple[str, ...]) -> bool:
        if isinstance(path, int):
            return True  # an already-open descriptor: opening it was checked
        try:
            resolved = realpath(fspath(path))  # type: ignore[call-overload]
        except BaseException:
            return False
        return any((resolved + os.sep).startswith(prefix) for prefix in roots)

    def refuse(event: str, detail: str) -> None:
        if len(violations) < 100:
            violations.append(f"{event}: {detail}"[:200])
        raise ForbiddenOperation(f"sandbox: {event} is not allowed ({detail})"[:300])

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if trusted[0] and event == "object.__getattr__":
            return
        if event == "open":
            path, mode = args[0], args[1]
            writing = isinstance(mode, str) and any(flag in mode for flag in "wax+")
            flags = args[2] if isinstance(args[2], int) else 0
            writing = writing or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
            allowed = (root,) if writing else (root, *readable)
            if path is not None and not inside(path, allowed):
                refuse(event, f"{path!r}")
        elif event in _PATH_EVENTS:
            for path in args[:2]:
                if isinstance(path, str | bytes | os.PathLike) and not inside(path, (root,)):
                    refuse(event, f"{path!r}")
        elif event == "import":
            if str(args[0]).partition(".")[0] in _FORBIDDEN_IMPORTS:
                refuse(event, str(args[0]))
        elif event in ("os.kill", "os.killpg"):
            if args[0] not in (own_pid, 0):
                refuse(event, f"pid {args[0]}")
        elif event in _FORBIDDEN_EVENTS or event.startswith(_FORBIDDEN_PREFIXES):
            refuse(event, "")

    sys.addaudithook(hook)
    return set_trusted


def _set_limits(limits: dict[str, int]) -> None:
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
        # Enforced for unprivileged users only; the audit hook refuses fork/spawn for root.
        (resource.RLIMIT_NPROC, 0, 0),
    ]
    for which, soft, hard in settings:
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            # A limit above the inherited hard limit cannot be raised: keep the stricter one.
            current = resource.getrlimit(which)[1]
            resource.setrlimit(which, (min(soft, current), current))


def _hide_fd(result_fd: int) -> int:
    """Move the result descriptor to a random high number: a guess is unlikely to hit it."""
    for _ in range(20):
        target = random.SystemRandom().randrange(40, 1000)
        try:
            os.fstat(target)
        except OSError:
            os.dup2(result_fd, target)
            os.close(result_fd)
            return target
    return result_fd


def _replace_stdin() -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)


def _encoder() -> Callable[[Any], str]:
    """A JSON encoder for the report, closed over references taken before candidate code runs.

    ``json.dumps`` and ``json.JSONEncoder`` are Python code that candidate code could patch (and
    the report carries the nonce); ``encode_basestring_ascii`` is C, and builtin types are
    immutable, so nothing here can be changed from outside.
    """
    from _json import encode_basestring_ascii as quote

    is_instance, join, text, items = isinstance, str.join, repr, dict.items

    def encode(value: Any) -> str:
        if value is None:
            return "null"
        if value is True or value is False:
            return "true" if value else "false"
        if is_instance(value, str):
            return str(quote(value))
        if is_instance(value, int):
            return text(int(value))
        if is_instance(value, list):
            return "[" + join(",", [encode(item) for item in value]) + "]"
        if is_instance(value, dict):
            pairs = [str(quote(str(key))) + ":" + encode(item) for key, item in items(value)]
            return "{" + join(",", pairs) + "}"
        return str(quote(text(value)))

    return encode


def _thread_count() -> int:
    import _thread

    return int(_thread._count())


if __name__ == "__main__":
    main()
