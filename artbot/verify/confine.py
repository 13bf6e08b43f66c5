"""ART's code confined: the process that imports it sees no other process and writes nowhere
but its scratch folder (why a clean environment is not enough: the README's "ART's code never
runs where a token is").

On Linux the child is started by this module (``python -m artbot.verify.confine SPEC --
COMMAND...``), which, before it runs COMMAND, puts it in new namespaces, set up with the
kernel's own calls (ctypes; nothing to install, root or not):

- a user namespace (the caller's uid mapped to 0, nothing else), a PID namespace with its own,
  read-only ``/proc`` (no other process can be seen, let alone read), a network namespace (no
  network, no abstract socket), an IPC namespace;
- a mount namespace whose root is a new, read-only tmpfs holding only what the check needs
  (``Spec.keep``: the tree's packages, the records and repros, artbot's package, Python's
  installation; and the system's libraries, :data:`SYSTEM`), each bound read-only, plus the
  scratch folder (read-write), a ``/proc`` of its own, a ``/dev`` with only null, zero, full,
  random and urandom, and of ``/etc`` only the loader's cache and the time zone; the old root is
  detached (``pivot_root``). So no home folder, no checkout's ``.git``, no wheel cache, no
  socket of an agent: none of them exists there;
- the caps of :mod:`.limits` (address space, file size, CPU time, processes: RLIMIT_NPROC,
  which the kernel does not apply to root, so as root ``pid_max`` of the PID namespace where
  the kernel has one per namespace, 6.14+);
- then every capability is dropped (bounding set, ambient, inheritable, permitted, effective;
  ``no_new_privs``; the root securebits locked), so nothing can be mounted, unmounted or
  remounted, and a new session is started (no controlling terminal);
- last, a seccomp filter (:mod:`.seccomp`, which lists what it denies).

When any step fails (or no cap on processes took, with ``require_process_cap``), COMMAND is not
run: the step and the reason are written to the descriptor ``report_fd`` (inherited from the
caller, closed before COMMAND starts, so COMMAND cannot forge a report) and the process exits
:data:`UNAVAILABLE`. The caller decides what then (``artbot verify`` refuses while a token is in
its environment; see :mod:`.apart`). Each report is one JSON line: ``failed``, ``ready`` (the
process cap that took) before COMMAND starts, and ``exit`` (its status, signal and CPU time)
from this process once COMMAND has ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNAVAILABLE = 125  # the confinement could not be set up; COMMAND did not run
PREFIX = "artbot confine: "

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000
# Per-mount flags a user namespace may not clear on a mount it inherited: kept on remount.
_KEPT = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# noroot, no_setuid_fixup, keep_caps and no_cap_ambient_raise, each set where it means "off",
# and each locked.
SECUREBITS = 0b1110_1111
_CAPABILITY_VERSION_3 = 0x20080522

DEVICES = ("null", "zero", "full", "random", "urandom")
# The system's libraries (Python's and torch's shared objects need them), shown read-only.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Copied into the new root's /etc: the loader's cache and the time zone; nothing else of /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/localtime")
NEW_ROOT = "/tmp"  # a fresh tmpfs is mounted over it in the child's mount namespace
MNT_DETACH = 2
NO_PROCESS_CAP = (
    "no cap on its processes: the kernel exempts root from RLIMIT_NPROC and has no pid_max "
    "per PID namespace before Linux 6.14; run verify as a user other than root"
)


@dataclass(frozen=True)
class Spec:
    """What the confined command may see: ``scratch`` (read-write) and ``keep`` (read-only
    folders or files it needs: artbot's package, Python, the tree under test); nothing else
    but the system's libraries (:data:`SYSTEM`). ``limits`` are set on it before it runs."""

    scratch: str
    keep: tuple[str, ...] = ()
    limits: dict[str, int] = field(default_factory=dict)
    report_fd: int = -1
    require_process_cap: bool = False  # no cap on its processes: COMMAND is not run

    def to_json(self) -> str:
        data = {"scratch": self.scratch, "keep": self.keep, "limits": self.limits}
        return json.dumps({**data, "fd": self.report_fd, "strict": self.require_process_cap})

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        limits = {str(k): int(v) for k, v in dict(data.get("limits") or {}).items()}
        keep, strict = tuple(data["keep"]), bool(data.get("strict"))
        return cls(str(data["scratch"]), keep, limits, int(data["fd"]), strict)


def command(spec: Spec, argv: Sequence[str], python: str = sys.executable) -> list[str]:
    """``argv`` as run confined."""
    return [python, "-m", "artbot.verify.confine", spec.to_json(), "--", *argv]


def supported() -> str | None:
    """Why confinement cannot be tried on this system (None: it can be tried)."""
    if not sys.platform.startswith("linux"):
        return f"namespaces are Linux's; this is {sys.platform}"
    return None


class SetupFailed(Exception):
    """A step of the confinement failed: the command is not run."""

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        self.errno = code


# -- the kernel's calls ----------------------------------------------------------------------


class _Libc:
    """The C library, loaded on first use (importing this module costs nothing elsewhere)."""

    def __getattr__(self, name: str) -> Any:
        lib = ctypes.CDLL(None, use_errno=True)
        return getattr(lib, name)


_libc = _Libc()


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        name = errno.errorcode.get(code, str(code))
        raise SetupFailed(f"{what}: {os.strerror(code)} ({name})", code)


def _mount(
    source: str | None, target: str, fstype: str | None, flags: int, what: str, data: str = ""
) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    options = data.encode() if data else None
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), options), what)


def _prctl(option: int, arg: int, what: str) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), 0, 0, 0), what)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities() -> None:
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    _prctl(PR_SET_SECUREBITS, SECUREBITS, "locking the root securebits")
    for cap in range(last + 1):
        _prctl(PR_CAPBSET_DROP, cap, "dropping the capability bounding set")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient")
    _prctl(PR_SET_NO_NEW_PRIVS, 1, "setting no_new_privs")
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "dropping every capability")


# -- the view of the file system -------------------------------------------------------------


def _unescape(field: str) -> str:
    r"""A path as /proc/self/mountinfo writes it (space, tab, newline, backslash as \ooo)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(text: str) -> Iterator[tuple[str, int]]:
    """(mount point, the per-mount flags to keep) for each line of ``/proc/self/mountinfo``."""
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) < 6:
            continue
        flags = 0
        for option in fields[5].split(","):
            flags |= _KEPT.get(option, 0)
        yield _unescape(fields[4]), flags


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _read_only_everywhere(scratch: str) -> None:
    """Every mount read-only but the scratch folder (bound onto itself first: its own mount)."""
    _mount(scratch, scratch, None, MS_BIND | MS_REC, "binding the scratch folder")
    for point, kept in mounts(Path("/proc/self/mountinfo").read_text()):
        if _inside(point, scratch):
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | kept, f"read-only {point}")
        except SetupFailed as exc:
            # A mount point this user cannot reach (EACCES) or one hidden under another mount
            # (ENOENT) cannot be written through either; anything else fails the setup.
            if exc.errno not in (errno.EACCES, errno.ENOENT):
                raise


def _bind(path: str, fd: int, target: str) -> None:
    """Bind what ``fd`` (an ``O_PATH`` descriptor) opens at ``target``, made for it."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).touch()
    _mount(f"/proc/self/fd/{fd}", target, None, MS_BIND | MS_REC, f"showing {path}")


def _minimal_dev(devices: dict[str, int], dev: str) -> None:
    flags = MS_NOSUID | MS_NOEXEC
    os.makedirs(dev, exist_ok=True)
    _mount("tmpfs", dev, "tmpfs", flags, "a fresh /dev")
    for name, fd in devices.items():
        Path(f"{dev}/{name}").touch()
        _mount(f"/proc/self/fd/{fd}", f"{dev}/{name}", None, MS_BIND, f"/dev/{name}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"{dev}/{name}")
    os.mkdir(f"{dev}/shm")
    _mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, "read-only /dev")


def _open_path(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_CLOEXEC)


def set_up_view(spec: Spec, pid_cap: int = 0) -> int | None:
    """In the new mount namespace (and as the new PID namespace's first process): a new root
    (a tmpfs, read-only) holding only ``spec.keep`` and the system's libraries, read-only, the
    scratch folder, a /proc of its own and a minimal /dev; the old root detached. With
    ``pid_cap``, the PID namespace's ``pid_max`` is set to it where the kernel has one per
    namespace (6.14+); returns the cap that took (None: none)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "making the mounts private")
    scratch = os.path.realpath(spec.scratch)
    _read_only_everywhere(scratch)  # binds of read-only mounts are read-only
    wanted = {os.path.realpath(p) for p in (*spec.keep, *SYSTEM) if os.path.exists(p)}
    links = {p: os.readlink(p) for p in SYSTEM if os.path.islink(p)}
    for path in spec.keep:  # a kept path reached through links (a venv's python) works as given
        links.update(_links_on(path))
    kept: list[tuple[str, int]] = []
    shown: list[str] = []
    for path in sorted(wanted - {scratch}):
        if not any(_inside(path, done) for done in shown):
            kept.append((path, _open_path(path)))
            shown.append(path)
    scratch_bytes = int(spec.limits.get("scratch_bytes", 0))
    given = _scratch_files(scratch) if scratch_bytes else {}
    if not scratch_bytes:
        kept.append((scratch, _open_path(scratch)))  # after its own mount: the writable one
    devices = {name: _open_path(f"/dev/{name}") for name in DEVICES}
    etc = {name: Path(name).read_bytes() for name in ETC_FILES if os.path.isfile(name)}
    _mount("tmpfs", NEW_ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "a new root")
    for path, fd in kept:
        _bind(path, fd, NEW_ROOT + path)
        os.close(fd)
    if scratch_bytes:  # a folder of its own, in memory, of a fixed size: nothing shared back
        os.makedirs(NEW_ROOT + scratch, exist_ok=True)
        _mount("tmpfs", NEW_ROOT + scratch, "tmpfs", MS_NOSUID | MS_NODEV, "a capped scratch",
               f"size={scratch_bytes},nr_inodes=65536,mode=700")  # fmt: skip
        for name, data in given.items():
            Path(NEW_ROOT + scratch, name).write_bytes(data)
    for link, target in sorted(links.items()):
        if not os.path.lexists(NEW_ROOT + link):
            os.makedirs(os.path.dirname(NEW_ROOT + link), exist_ok=True)
            os.symlink(target, NEW_ROOT + link)
    for name, data in etc.items():
        os.makedirs(os.path.dirname(NEW_ROOT + name), exist_ok=True)
        Path(NEW_ROOT + name).write_bytes(data)
    proc = NEW_ROOT + "/proc"
    os.makedirs(proc)
    _mount("proc", proc, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "a /proc of its own")
    capped = _cap_pids(proc, pid_cap) if pid_cap else None
    _minimal_dev(devices, NEW_ROOT + "/dev")
    for fd in devices.values():
        os.close(fd)
    _mount(None, proc, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
           "read-only /proc")  # fmt: skip
    _mount(None, NEW_ROOT, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
           "a read-only root")  # fmt: skip
    _pivot(NEW_ROOT)
    os.chdir(scratch)
    return capped


def _scratch_files(scratch: str, most: int = 16, size: int = 1 << 20) -> dict[str, bytes]:
    """The regular files the caller put in the scratch folder (a test, its conftest), copied
    into the capped scratch; at most ``most`` of at most ``size`` bytes each."""
    found: dict[str, bytes] = {}
    for entry in sorted(os.scandir(scratch), key=lambda e: e.name)[:most]:
        if entry.is_file(follow_symlinks=False) and entry.stat().st_size <= size:
            found[entry.name] = Path(entry.path).read_bytes()
    return found


def _links_on(path: str) -> dict[str, str]:
    """Each symbolic link on the way to ``path`` (absolute), and what it points to."""
    found: dict[str, str] = {}
    parts = Path(path).parts
    for n in range(2, len(parts) + 1):
        here = os.path.join(*parts[:n])
        if os.path.islink(here):
            found[here] = os.readlink(here)
            found.update(_links_on(os.path.join(os.path.dirname(here), found[here])))
    return found


def _cap_pids(proc: str, cap: int) -> int | None:
    """``pid_max`` of this PID namespace (Linux 6.14+; the kernel's minimum is 301)."""
    try:
        Path(f"{proc}/sys/kernel/pid_max").write_text(str(max(cap, 301)))
        return int(Path(f"{proc}/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        return None


_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}


def _pivot(new_root: str) -> None:
    """Make ``new_root`` the root and detach the old one (``pivot_root(".", ".")``)."""
    number = _PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise SetupFailed(f"pivot_root: its system call number on {os.uname().machine} is unknown")
    os.chdir(new_root)
    _check(_libc.syscall(number, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detaching the old root")
    os.chdir("/")


def _enter_namespaces() -> None:
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC
    _check(_libc.unshare(flags), "unshare (user, mount, PID, network, IPC namespaces)")
    try:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
        Path("/proc/self/gid_map").write_text(f"0 {gid} 1")
    except OSError as exc:
        raise SetupFailed(f"mapping the user into its namespace: {exc.strerror}") from None


def _deny_system_calls() -> None:
    from .seccomp import install

    try:
        install()
    except OSError as exc:
        raise SetupFailed(str(exc.strerror or exc), exc.errno or 0) from None


def _report(fd: int, **data: Any) -> None:
    """One JSON line to the caller's report descriptor."""
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.write(fd, (json.dumps(data)[:4000] + "\n").encode())


def _fail(message: str, fd: int = -1) -> int:
    _report(fd, failed=message)
    print(PREFIX + message, file=sys.stderr, flush=True)
    return UNAVAILABLE


def main(argv: Sequence[str]) -> int:
    """``python -m artbot.verify.confine SPEC -- COMMAND...``"""
    if len(argv) < 3 or argv[1] != "--":
        return _fail("usage: python -m artbot.verify.confine SPEC -- COMMAND...")
    run = list(argv[2:])
    return confined(Spec.from_json(argv[0]), lambda: os.execvp(run[0], run), exec_=True)


def confined(spec: Spec, start: Callable[[], int], *, exec_: bool = False) -> int:
    """Set up the confinement described by ``spec`` and call ``start`` in it (in the new PID
    namespace's first process, once every step has been taken, every capability dropped and
    the report descriptor closed to it); wait for it, report how it ended and return its exit
    status. ``exec_``: ``start`` replaces the process (the report descriptor is closed by the
    exec), as ``main`` does; otherwise it runs in this process (:mod:`.zygote`)."""
    from .limits import Limits, apply

    fd = spec.report_fd
    limits = Limits.from_dict(spec.limits) if spec.limits else None
    outer_uid = os.geteuid()
    why = supported()
    if why:
        return _fail(why, fd)
    try:
        _enter_namespaces()
    except SetupFailed as exc:
        return _fail(str(exc), fd)
    pid = os.fork()
    if pid == 0:  # the new PID namespace's first process
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, "asking to die with its parent")
            pid_max = set_up_view(spec, limits.processes if limits else 0)
            os.setsid()
            processes = None
            if limits is not None:
                # RLIMIT_NPROC binds on every user but root (the kernel exempts uid 0).
                apply(limits, processes=True)
                if outer_uid != 0:
                    processes = f"RLIMIT_NPROC {limits.processes}"
                elif pid_max is not None:
                    processes = f"pid_max {pid_max} of its PID namespace"
            if processes is None and spec.require_process_cap:
                raise SetupFailed(NO_PROCESS_CAP)
            _drop_capabilities()
            _deny_system_calls()  # last: every step above needed some of them
            _report(fd, ready={"processes": processes})
            if fd >= 0 and exec_:  # closed by a successful exec: COMMAND never holds it
                os.set_inheritable(fd, False)
            elif fd >= 0:  # COMMAND runs here: the descriptor is gone before it starts
                os.close(fd)
                fd = -1
            os._exit(start())
        except (SetupFailed, OSError, ValueError) as exc:
            os._exit(_fail(str(exc), fd))
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    _report(fd, exit=code if code >= 0 else None, signal=-code if code < 0 else None, cpu_s=cpu)
    return code if code >= 0 else 128 - code  # killed by a signal: as a shell says it


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
