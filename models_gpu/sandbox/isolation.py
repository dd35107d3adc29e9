"""Where a sandboxed process runs: inside bubblewrap, or, only when someone asks, without it.

The boundary is the operating system, set up by bubblewrap (Debian package ``bubblewrap``, the
tool Flatpak uses): each process gets fresh user, PID, network, IPC, UTS and cgroup namespaces
(no network: only the namespace's own loopback, which reaches nothing else), no new user
namespaces inside, uid and gid 65534, a read-only view of ``/usr`` and the interpreter's prefix
with every package directory (site-packages, dist-packages) of every Python there masked, the
packages the operator allows (below) read-only, a private size-capped tmpfs as its
only writable place, a read-only minimal ``/dev``, no ``/proc``, no ``/etc``, no environment, no
descriptors but the ones handed over, a seccomp deny list (``seccomp.py``), and it dies with its
parent. A worker running as root starts bubblewrap as user 65534 ("nobody",
through util-linux's ``setpriv``), so nothing in the sandbox is root on the host, not even
through the user namespace's mapping.

``DIALAB_SANDBOX`` chooses the mode: ``bubblewrap`` (the default) or ``none``. With ``none`` the
processes run directly under the worker's own user, with resource limits and a cleared
environment but no boundary: for code you trust (your own tests of the tool), never for model
output. Every report says which mode made it. Where bubblewrap is missing or cannot start, the
default mode refuses to run anything and ``SandboxUnavailable`` says how to enable it.

``DIALAB_SANDBOX_PYTHON`` names the interpreter run inside the sandbox. By default the worker's
own base interpreter is tried, then the system's ``python3``: the sandbox user must be able to
read it (a pyenv interpreter under a private home directory is not readable by "nobody").

``DIALAB_SANDBOX_PACKAGES`` lists the installed packages sandboxed code may import besides the
standard library (comma-separated import names; default ``numpy``, which MBPP+'s tests import;
empty for none). Each is found in the worker's environment and bound read-only at
``/sandbox-packages/NAME``, with its bundled libraries (``numpy.libs``). It adds no capability
the sandbox does not already give (native code can be loaded anyway); a package's own
dependencies must be listed too. It must have been built for the sandbox's interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import importlib.util
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from models_gpu.sandbox.seccomp import compiled_filter

MODE_VARIABLE = "DIALAB_SANDBOX"
PYTHON_VARIABLE = "DIALAB_SANDBOX_PYTHON"
PACKAGES_VARIABLE = "DIALAB_SANDBOX_PACKAGES"
DEFAULT_PACKAGES = "numpy"
PACKAGES_MOUNT = "/sandbox-packages"
Mode = Literal["bubblewrap", "none"]
MODES: tuple[Mode, ...] = ("bubblewrap", "none")
NOBODY = 65534
_GONE_WITHIN_SECONDS = 5.0
SANDBOX_HOME = "/tmp"
CODE_MOUNT = "/sandbox-code"  # where ``start``'s read-only code directory appears inside
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": SANDBOX_HOME,
    # No threads may start in the sandbox: numerical libraries must not try (OpenBLAS would).
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
HOW_TO_ENABLE = (
    "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap) and allow unprivileged user namespaces (in a container: run the worker with "
    "seccomp and AppArmor profiles that permit them, see docs/how-to/deploy.md, 'Running "
    "workers in production'). Only for code you trust, DIALAB_SANDBOX=none runs it without a "
    "sandbox."
)
# What the interpreter reports about itself: where its files are and which directories hold
# installed packages (to be masked). Run with -I, outside the sandbox, before any untrusted code.
_DESCRIBE_INTERPRETER = (
    "import json, site, sys, sysconfig\n"
    "paths = sysconfig.get_paths()\n"
    "sites = site.getsitepackages() + [paths['purelib'], paths['platlib']]\n"
    "print(json.dumps({'executable': sys.executable, 'prefix': sys.base_prefix,\n"
    "                  'exec_prefix': sys.base_exec_prefix, 'site_dirs': sites}))\n"
)
# Enough of the standard library to run the harness.
_SMOKE_TEST = "import ast, json, resource, traceback"


class SandboxUnavailable(RuntimeError):
    """Model-written code cannot be run here safely, and the configuration does not allow it."""


@dataclass(frozen=True)
class Isolation:
    """How to start one sandboxed Python process on this machine."""

    mode: Mode
    python: str
    mounts: tuple[str, ...] = ()  # bubblewrap arguments that build the filesystem view
    bwrap: str = ""
    packages_path: str = ""  # the directory, as seen inside, that holds the allowed packages

    def start(
        self,
        *,
        code: str,
        code_dir: Path,
        arguments: list[str],
        pass_fds: tuple[int, ...],
        stdout: IO[bytes] | int,
        stderr: IO[bytes] | int,
        tmpfs_mb: int,
        home: Path,
    ) -> Sandboxed:
        """Start ``python -I -S -B -c CODE CODE_DIR ARGUMENTS``, with a pipe on stdin for its job.

        ``code_dir`` is visible inside, read-only, at the path passed as ``sys.argv[1]``.
        ``home`` is the working directory of the unsandboxed mode (bubblewrap has its tmpfs).
        """
        if self.mode == "none":
            process = subprocess.Popen(
                [self.python, "-I", "-S", "-B", "-c", code, str(code_dir), *arguments],
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                pass_fds=pass_fds,
                cwd=home,
                env={**ENVIRONMENT, "HOME": str(home)},
                start_new_session=True,  # its own process group, so one killpg ends all it started
            )
            return Sandboxed(process, info_fd=None)
        seccomp_fd = _seccomp_descriptor()
        info_read, info_write = os.pipe()
        try:
            command = [*_as_nobody_when_root(), self.bwrap, *self._namespaces(tmpfs_mb, code_dir)]
            command += ["--info-fd", str(info_write)]
            if seccomp_fd is not None:
                command += ["--seccomp", str(seccomp_fd)]
            extra_fds = (info_write,) if seccomp_fd is None else (info_write, seccomp_fd)
            process = subprocess.Popen(
                [*command, self.python, "-I", "-S", "-B", "-c", code, CODE_MOUNT, *arguments],
                stdin=subprocess.PIPE,
                stdout=stdout,
                stderr=stderr,
                pass_fds=(*pass_fds, *extra_fds),
                cwd="/",
                env={},
            )
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        return Sandboxed(process, info_fd=info_read)

    def _namespaces(self, tmpfs_mb: int, code_dir: Path) -> list[str]:
        return [
            "--unshare-all",
            "--unshare-user",  # --unshare-all only tries it; it must happen
            "--disable-userns",
            "--uid",
            str(NOBODY),
            "--gid",
            str(NOBODY),
            "--die-with-parent",
            "--new-session",  # no TIOCSTI into a terminal the worker may have
            "--clearenv",
            *[arg for name, value in ENVIRONMENT.items() for arg in ("--setenv", name, value)],
            *self.mounts,
            "--dev",  # null, zero, urandom...: read-only below, or /dev/shm is an unbounded tmpfs
            "/dev",
            "--remount-ro",
            "/dev",
            "--size",
            str(tmpfs_mb * 1024 * 1024),
            "--tmpfs",
            SANDBOX_HOME,
            "--chdir",
            SANDBOX_HOME,
            "--ro-bind",
            str(code_dir),
            CODE_MOUNT,
            "--remount-ro",
            "/",
        ]


@dataclass
class Sandboxed:
    """One started sandbox: its process (bubblewrap, or the interpreter itself without one)."""

    process: subprocess.Popen[bytes]
    info_fd: int | None  # bubblewrap's --info-fd: the host pid of its PID namespace's first process

    def stop(self) -> None:
        """Kill everything the sandbox holds and return once it is all gone.

        Killing bubblewrap kills its namespace's first process (``--die-with-parent``), and the
        kernel then kills the rest of the namespace; but that happens after bubblewrap is gone,
        so we also kill that first process ourselves and wait for it: it exits only once the
        kernel has reaped every other process of its namespace.
        """
        first = self._namespace_first_process()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.info_fd is None:  # unsandboxed: its own process group
                os.killpg(self.process.pid, signal.SIGKILL)
            else:
                self.process.kill()
        # Killed, not drained: what is left in its pipes is not read (a flood has no end, and
        # the caller has read what it wanted, within its own bounds).
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        self.process.wait()
        if first is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                signal.pidfd_send_signal(first, signal.SIGKILL)
            # Readable once it has exited. poll, not select: a busy worker's descriptors pass
            # 1024, which select refuses.
            waiting = select.poll()
            waiting.register(first, select.POLLIN)
            waiting.poll(_GONE_WITHIN_SECONDS * 1000)
            os.close(first)
        if self.info_fd is not None:
            os.close(self.info_fd)
            self.info_fd = None

    def _namespace_first_process(self) -> int | None:
        """A pidfd of the namespace's first process, or None (no sandbox, or already gone)."""
        if self.info_fd is None:
            return None
        os.set_blocking(self.info_fd, False)
        try:
            info = json.loads(os.read(self.info_fd, 4096) or b"{}")
            return os.pidfd_open(int(info["child-pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _as_nobody_when_root() -> list[str]:
    """The command prefix that starts bubblewrap as user 65534 when we are root, else nothing.

    setpriv (util-linux) rather than ``Popen(user=...)``: asked to switch users, Python forks
    the whole worker instead of using vfork, which cost 26 ms a start from a process holding
    1 GB (a GPU worker holds far more) against 1.8 ms through setpriv. Leaving uid 0 for good
    clears every capability.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
    return [setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups"]


def _seccomp_descriptor() -> int | None:
    """A fresh descriptor holding the filter: bwrap reads it to the end, so none is shared."""
    program = compiled_filter()
    if program is None:
        return None
    fd = os.memfd_create("dialab-seccomp", 0)
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def configured_mode() -> Mode:
    value = os.environ.get(MODE_VARIABLE, "bubblewrap").strip() or "bubblewrap"
    if value not in MODES:
        raise ValueError(f"{MODE_VARIABLE}={value!r}: expected one of {', '.join(MODES)}")
    return value


def configured_packages() -> tuple[str, ...]:
    """The import names in ``DIALAB_SANDBOX_PACKAGES`` (default ``numpy``), validated."""
    value = os.environ.get(PACKAGES_VARIABLE, DEFAULT_PACKAGES)
    names = tuple(dict.fromkeys(name.strip() for name in value.split(",") if name.strip()))
    wrong = [name for name in names if not name.isidentifier()]
    if wrong:
        raise ValueError(
            f"{PACKAGES_VARIABLE}: {', '.join(map(repr, wrong))} is not a top-level import name "
            "(expected e.g. numpy,sympy,mpmath)"
        )
    return names


def current_isolation() -> Isolation:
    """The way this machine runs sandboxed processes, per ``DIALAB_SANDBOX`` (checked once)."""
    return _isolation(configured_mode(), os.environ.get(PYTHON_VARIABLE, ""), configured_packages())


def installed_package_dirs(names: tuple[str, ...]) -> dict[str, str]:
    """Where each of ``names`` is installed for the worker, by the name it gets in the sandbox:
    the package's directory, and its bundled shared libraries (``numpy.libs``, which numpy's
    extensions find by a path relative to their own). Names not installed are left out; a
    module that is a single file is not supported (none of the usual ones is)."""
    found: dict[str, str] = {}
    for name in names:
        spec = importlib.util.find_spec(name)  # a top-level name: nothing is imported
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            continue
        found[name] = locations[0]
        bundled = Path(locations[0]).with_name(f"{name}.libs")
        if bundled.is_dir():
            found[bundled.name] = str(bundled)
    return found


@functools.cache
def _isolation(mode: Mode, python: str, packages: tuple[str, ...]) -> Isolation:
    package_dirs = installed_package_dirs(packages)
    if mode == "none":
        return Isolation("none", python or sys.executable, packages_path=_linked(package_dirs))
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed. {HOW_TO_ENABLE}")
    package_mounts = [
        argument
        for name, directory in sorted(package_dirs.items())
        for argument in ("--ro-bind", directory, f"{PACKAGES_MOUNT}/{name}")
    ]
    failures = []
    for interpreter in [python] if python else _default_interpreters():
        try:
            candidate = Isolation(
                "bubblewrap",
                interpreter,
                (*_mounts(interpreter), *package_mounts),
                bwrap,
                PACKAGES_MOUNT if package_dirs else "",
            )
            _smoke_test(candidate)
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            failures.append(f"{interpreter}: {error}")
            continue
        return candidate
    raise SandboxUnavailable(
        "bubblewrap could not start a sandbox: " + "; ".join(failures) + f". {HOW_TO_ENABLE}"
    )


def _linked(package_dirs: dict[str, str]) -> str:
    """Unsandboxed: a private directory of links to the allowed packages, for ``sys.path``."""
    if not package_dirs:
        return ""
    directory = tempfile.mkdtemp(prefix="dialab-sandbox-packages-")
    atexit.register(shutil.rmtree, directory, True)
    for name, target in package_dirs.items():
        os.symlink(target, os.path.join(directory, name))
    return directory


def _default_interpreters() -> list[str]:
    found = [os.path.realpath(sys.executable), shutil.which("python3") or "", "/usr/bin/python3"]
    unique = dict.fromkeys(
        os.path.realpath(path) for path in found if path and os.path.exists(path)
    )
    return list(unique)


def _mounts(interpreter: str) -> tuple[str, ...]:
    """Read-only binds for /usr and the interpreter's prefix, site-packages masked."""
    described = subprocess.run(
        [interpreter, "-I", "-c", _DESCRIBE_INTERPRETER],
        capture_output=True,
        timeout=30,
        check=True,
        env=ENVIRONMENT,
    )
    facts = json.loads(described.stdout)
    mounts = ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):  # merged /usr or not
        path = Path("/") / top
        if path.is_symlink():
            mounts += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            mounts += ["--ro-bind", str(path), str(path)]
    for prefix in {facts["prefix"], facts["exec_prefix"]}:
        if not _inside(prefix, "/usr"):
            mounts += ["--ro-bind", prefix, prefix]
    # Its own package directories, and every other Python's under /usr: the application may
    # have been installed for another interpreter than the one the sandbox runs.
    others = glob.glob("/usr/lib*/python3*/*-packages") + glob.glob(
        "/usr/local/lib*/python3*/*-packages"
    )
    for site_dir in sorted({*facts["site_dirs"], *others}):
        if os.path.isdir(site_dir) and not os.path.islink(site_dir):
            mounts += ["--tmpfs", site_dir, "--remount-ro", site_dir]
    return tuple(mounts)


def _inside(path: str, root: str) -> bool:
    return (os.path.realpath(path) + os.sep).startswith(root + os.sep)


def _smoke_test(candidate: Isolation) -> None:
    with tempfile.TemporaryDirectory() as empty, open(os.devnull, "wb") as sink:
        os.chmod(empty, 0o755)  # readable by the sandbox's user
        sandbox = candidate.start(
            code=_SMOKE_TEST,
            code_dir=Path(empty),
            arguments=[],
            pass_fds=(),
            stdout=sink,
            stderr=subprocess.PIPE,
            tmpfs_mb=1,
            home=Path(empty),
        )
        try:
            _, error = sandbox.process.communicate(b"", timeout=30)
        finally:
            sandbox.stop()
    if sandbox.process.returncode != 0:
        message = error.decode("utf-8", errors="replace").strip().splitlines()
        raise ValueError(message[-1] if message else f"exit status {sandbox.process.returncode}")
