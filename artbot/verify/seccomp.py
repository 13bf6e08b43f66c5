"""The last step of the confinement: a seccomp filter on the kernel's surface the check never
needs and an attacker would use.

Inside its user namespace the confined process could make another one and get every
capability back in it (mount a tmpfs, make network and PID namespaces), and reach parts of the
kernel no check uses. So once every other step is taken (:func:`.confine.confined`), a filter
is installed (``no_new_privs`` is already set) that denies, with ``EPERM``:

- making namespaces: ``unshare``, ``setns``, and ``clone`` with any ``CLONE_NEW*`` flag
  (``clone3``, whose flags the filter cannot read, answers ``ENOSYS``: the C library then falls
  back to ``clone``, which the filter reads);
- mounting: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API
  (``open_tree``, ``move_mount``, ``fsopen``, ``fsconfig``, ``fsmount``, ``fspick``,
  ``mount_setattr``);
- ``bpf``, ``perf_event_open``, ``userfaultfd``, the key ring (``keyctl``, ``add_key``,
  ``request_key``), ``ptrace`` and ``process_vm_readv``/``writev``, ``io_uring_*``,
  ``memfd_create`` and ``memfd_secret`` (memory no cap counts), file handles
  (``open_by_handle_at``), and loading modules or kernels;

and kills the process on any other system call ABI than the machine's own (i386's
``int 0x80`` on x86_64, x32). The program is built here in classic BPF (nothing to install).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

# Classic BPF opcodes.
LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
NR, ARCH, ARG0_LOW = 0, 4, 16  # the low 32 bits of args[0] (little-endian machines)

# Every CLONE_NEW* flag clone() takes: NS, CGROUP, UTS, IPC, USER, PID, NET.
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
CLONE_NEW_ANY |= 0x40000000
X32_SYSCALL_BIT = 0x40000000

DENIED = (
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
    "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "bpf", "perf_event_open",
    "userfaultfd", "keyctl", "add_key", "request_key", "ptrace", "process_vm_readv",
    "process_vm_writev", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "memfd_create", "memfd_secret", "open_by_handle_at", "name_to_handle_at", "kexec_load",
    "init_module", "finit_module", "delete_module", "swapon", "acct",
)  # fmt: skip

# (audit arch, system call numbers) per machine.
_X86_64 = {
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155,
    "chroot": 161, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250,
    "add_key": 248, "request_key": 249, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "memfd_create": 319, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "kexec_load": 246, "init_module": 175, "finit_module": 313,
    "delete_module": 176, "swapon": 167, "acct": 163, "clone": 56,
}  # fmt: skip
_AARCH64 = {
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219, "add_key": 217,
    "request_key": 218, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
    "memfd_create": 279, "open_by_handle_at": 265, "name_to_handle_at": 264, "kexec_load": 104,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "swapon": 224, "acct": 89,
    "clone": 220,
}  # fmt: skip
# The same numbers on every architecture (the unified table, Linux 5.1+).
_COMMON = {
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "mount_setattr": 442, "memfd_secret": 447,
}  # fmt: skip
MACHINES = {"x86_64": (0xC000003E, _X86_64), "aarch64": (0xC00000B7, _AARCH64)}


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                ("k", ctypes.c_uint32)]  # fmt: skip


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def program(machine: str) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions for ``machine`` (``os.uname().machine``);
    raises KeyError for a machine it does not know."""
    arch, numbers = MACHINES[machine]
    table = {**_COMMON, **numbers}
    deny = SECCOMP_RET_ERRNO | errno.EPERM
    out = [
        (LD_W_ABS, 0, 0, ARCH),
        (JEQ_K, 1, 0, arch),
        (RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),  # another ABI (i386's int 0x80 on x86_64)
        (LD_W_ABS, 0, 0, NR),
    ]
    if machine == "x86_64":
        out += [(JSET_K, 0, 1, X32_SYSCALL_BIT), (RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS)]
    for name in DENIED:
        out += [(JEQ_K, 0, 1, table[name]), (RET_K, 0, 0, deny)]
    out += [(JEQ_K, 0, 1, table["clone3"]), (RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS)]
    out += [
        (JEQ_K, 0, 4, table["clone"]),
        (LD_W_ABS, 0, 0, ARG0_LOW),
        (JSET_K, 0, 1, CLONE_NEW_ANY),
        (RET_K, 0, 0, deny),
        (RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    out.append((RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return out


def install() -> None:
    """Install the filter on this process (and all it starts); raises OSError when the kernel
    refuses it, or for a machine without a table here."""
    machine = os.uname().machine
    if machine not in MACHINES or struct.pack("=H", 1) != b"\x01\x00":
        raise OSError(errno.ENOSYS, f"no seccomp table for {machine}")
    code = program(machine)
    filters = (_Filter * len(code))(*(_Filter(*ins) for ins in code))
    prog = _Program(len(code), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                           ctypes.c_ulong]  # fmt: skip
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        code_ = ctypes.get_errno()
        raise OSError(code_, f"installing the seccomp filter: {os.strerror(code_)}")
