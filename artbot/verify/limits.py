"""The caps on the check process, and its output read in bounded chunks.

The caps are set in the child before it runs the check (:mod:`.confine`, or ``preexec_fn``
where it runs unconfined), besides the wall clock. Measured on openpipe-art 0.5.20, 0.5.21 and
0.5.23 (all 14 checks in one process, 2026-12-04): at most 0.86 GB of address space (0.38 GB
resident), 3 threads, 5.4 s of CPU time; so the caps leave a wide margin. Whatever the child
prints is counted, never kept: artbot's memory does not grow with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import resource
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

GB = 1024**3
MB = 1024**2
CHUNK = 64 * 1024

# Exit codes the check process uses when a cap stopped it (faking one only mislabels a
# failure: the result is "could not run" either way).
EXIT_MEMORY = 90
EXIT_FILE_SIZE = 91
EXIT_PROCESSES = 92
EXIT_CPU = 93

# What a check hands back of its measurements for artbot to judge (issue #53, .rejudge).
MAX_TAPE_ENTRIES = 2000  # per claim: a search's inputs (300 at most) and its shrinking's
MAX_TAPE_BYTES = 4 * 1024 * 1024  # per item, as JSON: a few floats per entry


@dataclass(frozen=True)
class Limits:
    """Caps on the check process (and each process it starts)."""

    memory_bytes: int = 4 * GB  # RLIMIT_AS
    processes: int = 256  # RLIMIT_NPROC (threads count too), where it binds
    file_bytes: int = 64 * MB  # RLIMIT_FSIZE
    cpu_s: int = 300  # RLIMIT_CPU
    scratch_bytes: int = 256 * MB  # the confined scratch folder's size (a tmpfs), in all

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, int]) -> Limits:
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__dataclass_fields__})

    def words(self) -> str:
        return (
            f"at most {_size(self.memory_bytes)} of memory per process, {self.processes} "
            f"processes, {_size(self.file_bytes)} a file, {self.cpu_s} s of CPU per process"
        )


def _size(n: int) -> str:
    return f"{n / GB:g} GB" if n >= GB else f"{n / MB:g} MB"


def apply(limits: Limits, *, processes: bool = True) -> None:
    """Set the caps on this process (inherited by what it execs and forks). The process cap
    only where asked: outside a user namespace of its own it counts every process of the
    user, not the check's."""
    caps = [
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_CPU, limits.cpu_s),
        (resource.RLIMIT_CORE, 0),
    ]
    if processes:
        caps.append((resource.RLIMIT_NPROC, limits.processes))
    for which, value in caps:
        # The hard limit a little above the soft one: SIGXCPU first, then SIGKILL.
        hard = value + 5 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))


def hit(exc: BaseException) -> int | None:
    """The exit code that names the cap ``exc`` comes from, or None."""
    import errno

    if isinstance(exc, MemoryError):
        return EXIT_MEMORY
    if isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        return EXIT_FILE_SIZE
    if isinstance(exc, BlockingIOError) and exc.errno == errno.EAGAIN:  # fork() refused
        return EXIT_PROCESSES
    if isinstance(exc, RuntimeError) and "can't start new thread" in str(exc):
        return EXIT_PROCESSES
    return None


def named(limits: Limits, code: int | None, signum: int | None, cpu_s: float | None) -> str | None:
    """The cap the check process ran into, in words, from how it ended; None if none."""
    if code == EXIT_MEMORY or signum in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
        if code == EXIT_MEMORY:
            return f"the check used more than {_size(limits.memory_bytes)} of memory"
        return (
            f"the check process crashed ({signal.Signals(signum or 0).name}), as a process "
            f"does that runs into its {_size(limits.memory_bytes)} memory cap"
        )
    if code == EXIT_FILE_SIZE or signum == signal.SIGXFSZ:
        return f"the check wrote a file over {_size(limits.file_bytes)}"
    if code == EXIT_PROCESSES:
        return f"the check started more than {limits.processes} processes or threads"
    if (
        code == EXIT_CPU
        or signum == signal.SIGXCPU
        or (signum == signal.SIGKILL and cpu_s is not None and cpu_s >= limits.cpu_s)
    ):
        return f"the check used more than {limits.cpu_s} s of CPU time"
    return None


@dataclass
class Output:
    """How much a stream carried: the first ``keep`` bytes are held, the rest counted."""

    head: bytes = b""
    total: int = 0

    @property
    def dropped(self) -> int:
        return self.total - len(self.head)


def _drain(stream: object, into: Output, keep: int) -> None:
    read = stream.read  # type: ignore[attr-defined]
    while chunk := read(CHUNK):
        into.total += len(chunk)
        if len(into.head) < keep:
            into.head += chunk[: keep - len(into.head)]


class ResultPipe:
    """What the check process hands back, over a pipe it inherits (never a file artbot's
    process opens by name): read as it comes, at most ``cap + 1`` bytes kept (the caller sees
    it was over the cap), the rest counted and dropped. ``fd`` is the end the child writes,
    numbered 100 or above (:mod:`.zygote` gives it the same number in a fork)."""

    def __init__(self, cap: int):
        read, write = os.pipe()
        self.fd = fcntl.fcntl(write, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(write)
        self.cap, self._read, self.data, self.total = cap, read, b"", 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while chunk := os.read(self._read, CHUNK):
            self.total += len(chunk)
            if len(self.data) <= self.cap:
                self.data += chunk[: self.cap + 1 - len(self.data)]

    def close(self, wait_s: float = 10.0) -> bytes:
        """Once the child has ended: what it wrote (at most cap + 1 bytes)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._thread.join(timeout=wait_s)  # a process the check left running may hold it
        if self._read >= 0 and not self._thread.is_alive():
            os.close(self._read)
            self._read = -1
        return self.data


@dataclass
class Finished:
    returncode: int | None
    stdout: Output
    stderr: Output
    timed_out: bool


def run_bounded(
    argv: Sequence[str],
    *,
    stdin: bytes,
    env: dict[str, str],
    cwd: str,
    timeout_s: float,
    pass_fds: Sequence[int] = (),
    preexec_fn: Callable[[], None] | None = None,
    keep: int = 16 * 1024,
) -> Finished:
    """Run ``argv``, its stdout and stderr read in chunks of :data:`CHUNK` (the first ``keep``
    bytes held, the rest counted, none echoed); on time-out its process group is killed."""
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=cwd, pass_fds=tuple(pass_fds), preexec_fn=preexec_fn,
        start_new_session=True,
    )  # fmt: skip
    out, err = Output(), Output()
    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out, keep), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err, keep), daemon=True),
    ]
    for reader in readers:
        reader.start()
    assert proc.stdin is not None
    try:
        proc.stdin.write(stdin)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for reader in readers:
        reader.join(timeout=10)
    return Finished(proc.returncode, out, err, timed_out)


def capped_tapes(tapes: Any) -> dict[str, list[dict[str, Any]]]:
    """``tapes`` (claim -> list of ``{"case", "raw"}``) as JSON values, at most
    :data:`MAX_TAPE_ENTRIES` entries a claim and :data:`MAX_TAPE_BYTES` in all; what is over is
    dropped (the dropped inputs then count as not measured). Anything not of that shape is
    dropped too: the child's to get right, never a pass."""
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(tapes, Mapping):
        return out
    size = 0
    for cid, entries in tapes.items():
        if not isinstance(cid, str) or not isinstance(entries, list):
            continue
        kept: list[dict[str, Any]] = out.setdefault(cid, [])
        for entry in entries[:MAX_TAPE_ENTRIES]:
            if not isinstance(entry, Mapping) or set(entry) != {"case", "raw"}:
                continue
            try:
                text = json.dumps(entry, allow_nan=True)
            except (TypeError, ValueError):
                continue
            size += len(text)
            if size > MAX_TAPE_BYTES:
                return out
            kept.append(json.loads(text))
    return out
