"""A seccomp filter for sandboxed processes, in the compiled form ``bwrap --seccomp FD`` reads.

Bubblewrap applies a filter it is handed but does not write one (Flatpak generates its own with
libseccomp). The filter here is a short deny list: the system calls no verification needs that
widen the kernel's attack surface or reach outside the sandbox (debugging other processes,
kernel modules and keys, mounting, namespaces, BPF, io_uring, pidfds, the clock). They fail with
EPERM; everything else is allowed, so the standard library keeps working. Namespaces, the
read-only filesystem view and resource limits remain the boundary; this narrows what a kernel
bug in a rarely used call could give away.

The program is classic BPF: check the architecture (a foreign ABI would renumber the calls, so
it kills the process), load the call number, compare it with each denied number. Numbers come
from the kernel's ``asm/unistd_64.h`` (x86-64) and ``asm-generic/unistd.h`` (arm64).
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

# name: (x86-64 number, arm64 number); None where the call does not exist there.
_DENIED: dict[str, tuple[int, int | None]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "reboot": (169, 142),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "unshare": (272, 97),
    "setns": (308, 268),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "fanotify_init": (300, 262),
    "acct": (163, 89),
    "quotactl": (179, 60),
    "pidfd_open": (434, 434),
    "pidfd_getfd": (438, 438),
    "pidfd_send_signal": (424, 424),
    "syslog": (103, 116),
    "vhangup": (153, 58),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "settimeofday": (164, 170),
    "clock_settime": (227, 112),
    "clock_adjtime": (305, 266),
    "adjtimex": (159, 171),
    "sethostname": (170, 161),
    "setdomainname": (171, 162),
    "lookup_dcookie": (212, 18),
    "uselib": (134, None),
}

# <linux/audit.h> architecture tokens, and which column of _DENIED each uses.
_ARCHITECTURES = {"x86_64": (0xC000003E, 0), "aarch64": (0xC00000B7, 1)}
_X32_SYSCALL_BIT = 0x40000000  # x86-64's second ABI: same calls, other numbers

# <linux/filter.h>, <linux/seccomp.h>
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_IF_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_IF_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_FAIL_WITH_EPERM = 0x00050000 | errno.EPERM
_NUMBER_OFFSET, _ARCH_OFFSET = 0, 4  # struct seccomp_data


def denied_calls() -> tuple[str, ...]:
    return tuple(_DENIED)


@functools.cache
def compiled_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or None where there is no table for it."""
    machine = machine or platform.machine()
    if machine not in _ARCHITECTURES:
        return None
    audit_arch, column = _ARCHITECTURES[machine]
    numbers = sorted({n for pair in _DENIED.values() if (n := pair[column]) is not None})
    checks: list[tuple[int, int]] = []  # (jump opcode, constant): each jumps to "deny" if true
    if machine == "x86_64":
        checks.append((_JUMP_IF_AT_LEAST, _X32_SYSCALL_BIT))
    checks += [(_JUMP_IF_EQUAL, number) for number in numbers]

    program = [
        (_LOAD_WORD, 0, 0, _ARCH_OFFSET),
        (_JUMP_IF_EQUAL, 1, 0, audit_arch),
        (_RETURN, 0, 0, _KILL_PROCESS),
        (_LOAD_WORD, 0, 0, _NUMBER_OFFSET),
    ]
    deny_index = len(program) + len(checks) + 1  # after the checks and the "allow"
    for opcode, constant in checks:
        program.append((opcode, deny_index - (len(program) + 1), 0, constant))
    program += [(_RETURN, 0, 0, _ALLOW), (_RETURN, 0, 0, _FAIL_WITH_EPERM)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
