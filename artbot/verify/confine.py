"""ART's code confined: the process that imports it sees no other process and writes nowhere
but its scratch folder.

A wheel's module runs as its author wrote it. Scrubbing the child's environment is not enough:
a process can read ``/proc/<pid>/environ`` of every process of its user (the shell that holds
``GH_TOKEN`` included) and write wherever that user may. So on Linux the child is started by
this module (``python -m artbot.verify.confine SPEC -- COMMAND...``), which, before it runs
COMMAND, puts it in new namespaces, set up with the kernel's own calls (ctypes; nothing to
install, root or not):

- a user namespace (the caller's uid mapped to 0, nothing else), a PID namespace with its own,
  read-only ``/proc`` (no other process can be seen, let alone read), a network namespace (no
  network, no abstract socket), an IPC namespace;
- a mount namespace in which every mount is read-only except the scratch folder, and ``/tmp``,
  ``/var/tmp``, ``/run``, ``/dev/shm`` and the home folder are empty (no socket of an agent, no
  stored credential), apart from the folders the check needs, shown read-only; ``/dev`` holds
  only null, zero, full, random and urandom;
- then every capability is dropped (bounding set, ambient, inheritable, permitted, effective;
  ``no_new_privs``; the root securebits locked), so nothing can be mounted, unmounted or
  remounted, and a new session is started (no controlling terminal).

When any step fails, COMMAND is not run: the step and the reason are written to the
descriptor ``report_fd`` (inherited from the caller, closed before COMMAND starts, so COMMAND
cannot forge a failure) and the process exits :data:`UNAVAILABLE`. The caller decides what
then (``artbot verify`` refuses while a token is in its environment; see :mod:`.apart`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
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

# Emptied in the child's view (kept folders inside them are shown again, read-only).
MASKED = ("/tmp", "/var/tmp", "/run", "/dev/shm")
DEVICES = ("null", "zero", "full", "random", "urandom")


@dataclass(frozen=True)
class Spec:
    """What the confined command may see: ``scratch`` (read-write), ``keep`` (read-only
    folders it needs, e.g. the project, Python, ART's tree) and ``homes`` (emptied)."""

    scratch: str
    keep: tuple[str, ...] = ()
    homes: tuple[str, ...] = ()
    report_fd: int = -1

    def to_json(self) -> str:
        return json.dumps(
            {"scratch": self.scratch, "keep": self.keep, "homes": self.homes, "fd": self.report_fd}
        )

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data = json.loads(text)
        keep, homes = tuple(data["keep"]), tuple(data["homes"])
        return cls(str(data["scratch"]), keep, homes, int(data["fd"]))


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


def _mount(source: str | None, target: str, fstype: str | None, flags: int, what: str) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), None), what)


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


def _show_again(folders: Sequence[tuple[str, int]], under: str) -> None:
    """Bind each kept folder (an ``O_PATH`` descriptor opened before ``under`` was emptied)
    back at its own path inside ``under``."""
    shown: list[str] = []
    for path, fd in sorted(folders, key=lambda kept: kept[0]):
        if not _inside(path, under):
            continue
        if any(_inside(path, done) for done in shown):
            continue  # already visible through a kept folder above it
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            Path(path).touch()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, f"showing {path}")
        shown.append(path)


def _empty(folder: str, kept: Sequence[tuple[str, int]]) -> None:
    """An empty, read-only tmpfs over ``folder``, with the kept folders inside it shown again."""
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _mount("tmpfs", folder, "tmpfs", flags, f"emptying {folder}")
    _show_again(kept, folder)
    _mount(None, folder, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, f"read-only {folder}")


def _minimal_dev(devices: dict[str, int]) -> None:
    flags = MS_NOSUID | MS_NOEXEC
    _mount("tmpfs", "/dev", "tmpfs", flags, "a fresh /dev")
    for name, fd in devices.items():
        Path(f"/dev/{name}").touch()
        _mount(f"/proc/self/fd/{fd}", f"/dev/{name}", None, MS_BIND, f"/dev/{name}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):  # fmt: skip
        os.symlink(target, f"/dev/{name}")
    os.mkdir("/dev/shm")
    _mount(None, "/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, "read-only /dev")


def _open_path(path: str) -> int:
    return os.open(path, os.O_PATH | os.O_CLOEXEC)


def set_up_view(spec: Spec) -> None:
    """In the new mount namespace (and as the new PID namespace's first process): the view
    described in the module's docstring."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, "making the mounts private")
    scratch = os.path.realpath(spec.scratch)
    wanted = {os.path.realpath(p) for p in (*spec.keep, scratch) if os.path.exists(p)}
    _read_only_everywhere(scratch)
    # Opened after the scratch's own mount exists, so its descriptor is the writable one.
    kept = [(path, _open_path(path)) for path in sorted(wanted)]
    devices = {name: _open_path(f"/dev/{name}") for name in DEVICES}
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "a /proc of its own")
    masked: list[str] = []
    homes = {os.path.realpath(h) for h in spec.homes if h and os.path.isdir(h)}
    for folder in sorted({*MASKED, *homes}):
        real = os.path.realpath(folder)
        if real == "/" or not os.path.isdir(real) or any(_inside(real, m) for m in masked):
            continue
        _empty(real, kept)
        masked.append(real)
    _minimal_dev(devices)
    _mount(None, "/proc", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
           "read-only /proc")  # fmt: skip
    for _, fd in kept:
        os.close(fd)
    for fd in devices.values():
        os.close(fd)
    os.chdir(scratch)


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


def _fail(message: str, fd: int = -1) -> int:
    if fd >= 0:
        with contextlib.suppress(OSError):
            os.write(fd, message.encode("utf-8", "replace")[:2000])
    print(PREFIX + message, file=sys.stderr, flush=True)
    return UNAVAILABLE


def main(argv: Sequence[str]) -> int:
    """``python -m artbot.verify.confine SPEC -- COMMAND...``"""
    if len(argv) < 3 or argv[1] != "--":
        return _fail("usage: python -m artbot.verify.confine SPEC -- COMMAND...")
    spec, run = Spec.from_json(argv[0]), list(argv[2:])
    fd = spec.report_fd
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
            set_up_view(spec)
            os.setsid()
            _drop_capabilities()
            if fd >= 0:  # closed by a successful exec: COMMAND never holds it
                os.set_inheritable(fd, False)
            os.execvp(run[0], run)
        except (SetupFailed, OSError) as exc:
            os._exit(_fail(str(exc), fd))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 128 - code  # killed by a signal: as a shell says it


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
