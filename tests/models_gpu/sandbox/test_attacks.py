"""The sandbox tried as an attacker would: every case fails as an attempt, the host is unharmed.

Each candidate defines a wrong ``add`` and then tries to harm the host, read a secret, or make the
wrong answer pass. After each run we check, from the outside: the attempt did not pass; no file
appeared outside; no sandboxed process is left; the parent and a bystander process are alive; a
listening port on loopback got no connection; the secret (in a file and in the environment) is
nowhere in the verdict. A second, independent suite is kept outside the repository.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from models_gpu.sandbox import SandboxLimits, run_tests
from models_gpu.sandbox.runner import HARNESS_MODULE

WRONG = "def add(a, b):\n    return a - b\n"
TESTS = "assert add(1, 2) == 3\nassert add(-1, 1) == 0\n"
REPO = Path(__file__).resolve().parents[3]
FORGED_REPORT = '{"loaded": true, "load_error": null, "limit": null, "tests": [{"name": "x", "passed": true, "error": null}]}'  # noqa: E501
HARNESS_MARKER = HARNESS_MODULE  # in the command line of every sandboxed process and its bwrap

ATTACKS: dict[str, str] = {
    # Native code and other interpreters' packages.
    "ctypes system() a shell": "import ctypes\nctypes.CDLL(None).system(b'touch {outside}/pwned; sleep 600 &')",  # noqa: E501
    "extension module of the app's virtualenv by path": (
        "import importlib.machinery, importlib.util\n"
        "loader = importlib.machinery.ExtensionFileLoader('x', {venv_extension!r})\n"
        "importlib.util.module_from_spec(importlib.util.spec_from_loader('x', loader))"
    ),
    "site-packages put back on sys.path": "import sys\nsys.path.append({site_packages!r})\nimport django",  # noqa: E501
    "cffi": "import cffi",
    "a native library written to /tmp": (
        "import shutil, ctypes\nshutil.copy('/usr/lib/x86_64-linux-gnu/libc.so.6', '/tmp/l.so')\n"
        "ctypes.CDLL('/tmp/l.so').system(b'touch {outside}/pwned')"
    ),
    # Paths: directory descriptors, .., /proc, symlinks.
    "directory-descriptor-relative open": (
        "import os\nroot = os.open('/', os.O_RDONLY)\n"
        "print(os.read(os.open({secret_relative!r}, os.O_RDONLY, dir_fd=root), 100))"
    ),
    "dot-dot out of the work directory": "print(open('../../../..' + {secret!r}).read())",
    "symlink to the secret": "import os\nos.symlink({secret!r}, 'link')\nprint(open('link').read())",  # noqa: E501
    "the parent's /proc environ": "import os\nprint(open('/proc/%d/environ' % os.getppid()).read())",  # noqa: E501
    "/proc/self/environ": "print(open('/proc/self/environ').read())",
    "/proc/1/root": "print(open('/proc/1/root' + {secret!r}).read())",
    "the environment": "import os\nprint(dict(os.environ))",
    "list the filesystem": "import os\nprint(os.listdir('/'), os.listdir('/tmp'))\nopen('/etc/passwd')",  # noqa: E501
    "the data directory and source tree": "print(open({repo_file!r}).read())",
    # Writes outside.
    "write outside": "open({outside!r} + '/pwned', 'w').write('x')",
    "write into /usr": "open('/usr/pwned', 'w').write('x')",
    "write into /dev/shm": "open('/dev/shm/pwned', 'w').write('x' * 10**6)",
    # Signals and processes.
    "kill the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
    "kill everyone": "import os, signal\nos.kill(-1, signal.SIGKILL)",
    "kill the host's pid": "import os, signal\nos.kill({host_pid}, signal.SIGKILL)",
    "pidfd of the parent": (
        "import os, signal\nsignal.pidfd_send_signal(os.pidfd_open(os.getppid()), signal.SIGKILL)"
    ),
    "pidfd of the host's pid": (
        "import os, signal\nsignal.pidfd_send_signal(os.pidfd_open({host_pid}), signal.SIGKILL)"
    ),
    "fork that outlives the verdict": "import os, time\nif os.fork() == 0:\n    time.sleep(600)",
    "posix_spawn a sleeper": "import os\nos.posix_spawn('/usr/bin/sleep', ['sleep', '600'], {{}})",
    "thread that outlives the verdict": (
        "import threading, time\nthreading.Thread(target=time.sleep, args=(600,)).start()"
    ),
    "ptrace the tests' process": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "assert all(libc.ptrace(16, pid, 0, 0) == -1 for pid in range(1, 100))"
    ),
    "a nested user namespace": (
        "import ctypes\nassert ctypes.CDLL(None).unshare(0x10000000) == 0"  # CLONE_NEWUSER
    ),
    "become root": "import os\nos.setuid(0)",
    # Network.
    "the database's port": "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=2)",  # noqa: E501
    "redis's port": "import socket\nsocket.create_connection(('127.0.0.1', 6379), timeout=2)",
    "a listening port on loopback": "import socket\nsocket.create_connection(('127.0.0.1', {canary_port}), timeout=2)",  # noqa: E501
    "the database's unix socket": (
        "import socket\ns = socket.socket(socket.AF_UNIX)\n"
        "s.connect('/var/run/postgresql/.s.PGSQL.5432')"
    ),
    "the internet": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)",
    # Bombs.
    "memory bomb": "x = bytearray(10**10)",
    "memfd bomb": "import os\nfd = os.memfd_create('x')\nwhile True:\n    os.write(fd, b'x' * 2**20)",  # noqa: E501
    "disk bomb": "i = 0\nwhile True:\n    open('f%d' % i, 'wb').write(b'x' * 2**20)\n    i += 1",
    "output bomb": "import os\nwhile True:\n    os.write(1, b'x' * 2**20)",
    "descriptor bomb": "import os\nfds = [os.open('/dev/null', os.O_RDONLY) for _ in range(10**5)]",
    # Forging the grade.
    "inherited descriptors: forge a report on each": (
        "import os\n"
        "for fd in range(0, 1024):\n"
        "    try:\n"
        "        os.write(fd, {forged!r}.encode())\n"
        "    except OSError:\n"
        "        pass"
    ),
    "forged report on stdout and stderr": (
        "import sys\nprint({forged!r})\nprint({forged!r}, file=sys.stderr)"
    ),
    "forged frames on the channel": (
        "import json, os\n"
        "def frame(message):\n"
        "    data = json.dumps(message).encode()\n"
        "    return len(data).to_bytes(4, 'big') + data\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        "        os.write(fd, frame({{'loaded': True, 'names': {{'add': 3}}}}) + frame({{'value': 3}}))\n"  # noqa: E501
        "    except OSError:\n"
        "        pass"
    ),
    "early exit with status 0": "import sys\nsys.exit(0)",
    "hard exit inside the function": "import os\ndef add(a, b):\n    os._exit(0)",
    "exit swallowed by the tests": "def add(a, b):\n    raise SystemExit(0)",
    "patched AssertionError": "import builtins\nbuiltins.AssertionError = type('X', (Exception,), {{}})",  # noqa: E501
    "patched ast: every assert becomes pass": (
        "import ast\n"
        "ast.parse = lambda *a, **k: ast.Module(body=[], type_ignores=[])\n"
        "ast.Assert = ast.Pass"
    ),
    "patched builtins": "import builtins\nbuiltins.abs = lambda x: 0\nbuiltins.len = lambda x: 0",
    "an object equal to everything": (
        "class Yes:\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = object.__hash__\n"
        "def add(a, b):\n    return Yes()"
    ),
    "an int subclass equal to everything": (
        "class Yes(int):\n    def __eq__(self, other):\n        return True\n"
        "def add(a, b):\n    return Yes(0)"
    ),
    "read the tests from memory and disk": (
        "import os\n"
        "for root in ('/', '/tmp', '/dev'):\n"
        "    print(os.listdir(root))\n"
        "print(open('/proc/1/cmdline').read())"
    ),
}


@dataclass(frozen=True)
class Host:
    secret: str
    secret_file: Path
    outside: Path
    canary: socket.socket
    bystander: subprocess.Popen[bytes]

    def prepare(self, attack: str) -> str:
        purelib = Path(sysconfig.get_paths()["purelib"])
        extension = next(iter(sorted(purelib.rglob("*.so"))), purelib / "none.so")
        code = attack.format(
            outside=str(self.outside),
            secret=str(self.secret_file),
            secret_relative=str(self.secret_file).lstrip("/"),
            venv_extension=str(extension),
            site_packages=str(purelib),
            repo_file=str(REPO / "webapp" / "settings.py"),
            host_pid=os.getpid(),
            canary_port=self.canary.getsockname()[1],
            forged=FORGED_REPORT,
        )
        # The wrong add comes first so that a later "def add" in the attack wins.
        return WRONG + "try:\n" + _indent(code) + "\nexcept Exception as error:\n    print(error)\n"


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in code.splitlines())


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    secret = secrets.token_hex(16)
    # World-readable on purpose: only the sandbox, not file permissions, keeps it from the code.
    outside = Path(f"/tmp/dialab-attack-{secret[:8]}")
    outside.mkdir(mode=0o777)
    outside.chmod(0o777)
    secret_file = outside / "secret_key"
    secret_file.write_text(secret)
    secret_file.chmod(0o644)
    monkeypatch.setenv("DIALAB_TEST_API_KEY", secret)
    monkeypatch.setenv("DATABASE_URL", f"postgres://dialab:{secret}@127.0.0.1:5432/dialab")
    canary = socket.create_server(("127.0.0.1", 0))
    canary.setblocking(False)
    bystander = subprocess.Popen(["sleep", "600"])
    try:
        yield Host(secret, secret_file, outside, canary, bystander)
    finally:
        bystander.kill()
        bystander.wait()
        canary.close()
        for path in outside.iterdir():
            path.unlink()
        outside.rmdir()


def sandboxed_processes() -> list[int]:
    """Live processes of a sandboxed verification started by this test session (zombies, already
    dead, are not counted).

    This session's: the process or one of its parents names this session's temporary directory
    (every sandbox's bubblewrap does: the harness is mounted from there). So a sandbox left behind
    is counted whoever its parent is now, and two test sessions run side by side, each with its
    own TMPDIR (``scripts/test.sh``), do not count each other's.
    """
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                sandboxed = HARNESS_MARKER.encode() in (entry / "cmdline").read_bytes()
                alive = sandboxed and "State:\tZ" not in (entry / "status").read_text()
                if alive and _started_by_this_session(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _started_by_this_session(pid: int) -> bool:
    """Whether ``pid`` or one of its parents names this session's temporary directory."""
    ours = os.path.join(tempfile.gettempdir(), "").encode()
    while pid > 1:
        if ours in Path(f"/proc/{pid}/cmdline").read_bytes():
            return True
        status = Path(f"/proc/{pid}/status").read_text()
        pid = int(status.split("\nPPid:\t", 1)[1].split("\n", 1)[0])
    return False


def assert_host_unharmed(host: Host, verdict_text: str) -> None:
    assert sorted(path.name for path in host.outside.iterdir()) == ["secret_key"]
    assert not Path("/usr/pwned").exists()
    assert sandboxed_processes() == [], "a sandboxed process outlived the verdict"
    assert host.bystander.poll() is None, "a process outside the sandbox was killed"
    with pytest.raises(BlockingIOError):
        host.canary.accept()
    assert host.secret not in verdict_text, "the secret reached the verdict"


@pytest.mark.parametrize("name", list(ATTACKS))
def test_the_attack_fails_and_the_host_is_unharmed(name: str, host: Host) -> None:
    limits = SandboxLimits(timeout_seconds=2, memory_mb=256)
    report = run_tests(host.prepare(ATTACKS[name]), TESTS, entry_point="add", limits=limits)
    assert not report.passed, (name, report)
    assert report.isolation == "bubblewrap"
    assert_host_unharmed(host, repr(report))


@pytest.mark.parametrize("entry_point", ["add", None])
def test_names_that_shadow_the_builtins_the_tests_use_are_not_theirs(
    entry_point: str | None, host: Host
) -> None:
    candidate = (
        WRONG
        + "def abs(x):\n    return 0\n"
        + "def len(x):\n    return 3\n"
        + "def isinstance(*args):\n    return True\n"
        + "AssertionError = ValueError\n"
    )
    tests = (
        "assert abs(add(1, 2) - 3) < 0.5\n"
        # Each passes only if the name is the candidate's, not the builtin.
        "assert len([add(1, 2)]) == 3\n"
        "assert isinstance(add(1, 2), str)\n"
        "try:\n    assert add(1, 2) == 3\nexcept AssertionError:\n    raise\n"
    )
    report = run_tests(
        candidate, tests, entry_point=entry_point, limits=SandboxLimits(timeout_seconds=2)
    )
    assert report.outcome == "tests_failed", report
    assert not any(test.passed for test in report.tests), report


def test_the_same_attacks_without_an_entry_point_fail_too(host: Host) -> None:
    # Without an entry point every name the candidate defines reaches the tests as a stand-in.
    for name in ("an object equal to everything", "patched ast: every assert becomes pass"):
        report = run_tests(
            host.prepare(ATTACKS[name]), TESTS, limits=SandboxLimits(timeout_seconds=2)
        )
        assert not report.passed, (name, report)
        assert_host_unharmed(host, repr(report))


def test_a_killed_verification_leaves_nothing_behind(host: Host) -> None:
    """The deadline kills both sandboxes, and everything they started, whatever they do."""
    candidate = host.prepare("import time\ntime.sleep(600)")
    report = run_tests(candidate, TESTS, entry_point="add", limits=SandboxLimits(timeout_seconds=1))
    assert report.outcome == "timeout"
    assert_host_unharmed(host, repr(report))


def test_the_parent_process_group_survives(host: Host) -> None:
    before = signal.getsignal(signal.SIGTERM)
    run_tests(
        host.prepare("import os, signal\nos.killpg(0, signal.SIGTERM)"), TESTS, entry_point="add"
    )
    assert signal.getsignal(signal.SIGTERM) == before
    assert_host_unharmed(host, "")
