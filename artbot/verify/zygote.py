"""A warm interpreter for the confined checks: torch and pytest imported once, and each check
forked from it and confined before anything of the tree is imported (docs/design.md).

Started once per artbot process and environment with the child's environment
(:func:`.apart.child_env`), it imports only what artbot trusts, never a tree's module. The
fork runs :func:`.confine.confined`, then the module as ``python -m MODULE ARGS`` would
(:mod:`runpy`): a check inherits only modules every check may see and the descriptors it is
given, and cannot see the zygote (it is outside its PID namespace). Only
``[sys.executable, "-m", MODULE, ...]`` run confined goes this way (:func:`run`); when the
zygote cannot be started or has gone, the caller runs the command as before.

The protocol, over a ``SOCK_SEQPACKET`` pair: the caller sends one JSON request (the confine
:class:`.confine.Spec`, the argv, the environment, the working folder) with four descriptors
(stdin, stdout, stderr, the report); the zygote answers ``{"pid": N}`` when the check has been
forked and ``{"exit": CODE}`` when it has ended. The caller keeps the wall clock and kills
``N`` when it runs over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .confine import PR_SET_PDEATHSIG, Spec, confined
from .limits import EXIT_CPU, Finished, Output, _drain

# Set per check; the zygote itself is started without them, so one zygote serves every check
# of a process whatever its scratch folder or tree.
PER_CHECK = frozenset({"HOME", "TMPDIR", "TEMP", "TMP", "ARTBOT_ART_PACKAGE"})
WARM = ("torch", "numpy", "pytest", "artbot.verify.code", "artbot.records.catalog")
MAX_MESSAGE = 1 << 20
START_S = 120.0  # how long the zygote may take to fork a check (its imports, the first time)

_ZYGOTES: dict[tuple[str, ...], Zygote | None] = {}


@dataclass(frozen=True)
class Check:
    """A command to run confined: ``python -m MODULE ARGS`` for the zygote to fork."""

    argv: Sequence[str]
    stdin: bytes
    env: Mapping[str, str]
    cwd: str
    timeout_s: float
    results_fd: int = -1  # the pipe the check writes its results to, at the same number


class Gone(Exception):
    """The zygote ended or stopped answering: the caller runs the command as before."""


class Zygote:
    """One warm interpreter, as seen from artbot's process."""

    def __init__(self, python: str, env: Mapping[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.proc = subprocess.Popen(
            [python, "-m", "artbot.verify.zygote", str(theirs.fileno())],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(env), cwd="/", pass_fds=(theirs.fileno(),), start_new_session=True,
        )  # fmt: skip
        theirs.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)

    def run(self, spec: Spec, check: Check, keep: int = 16 * 1024) -> Finished:
        """``check`` run confined by ``spec`` in a fork of this zygote, as
        :func:`.limits.run_bounded` runs it: output counted, never echoed; killed on time-out.
        Raises :class:`Gone` when the zygote did not take the request (nothing ran)."""
        pipes = [os.pipe() for _ in range(3)]
        given = [pipes[0][0], pipes[1][1], pipes[2][1], spec.report_fd]
        given += [check.results_fd] if check.results_fd >= 0 else []
        request: dict[str, Any] = {
            "spec": spec.to_json(),
            "argv": list(check.argv),
            "env": dict(check.env),
        }
        request["cwd"], request["results_fd"] = check.cwd, check.results_fd
        timeout_s = check.timeout_s
        try:
            try:
                socket.send_fds(self.sock, [json.dumps(request).encode()], given)
                pid = int(self._answer(START_S)["pid"])  # its imports, on first use
            finally:
                for fd in given[:3]:
                    os.close(fd)
            out, err = Output(), Output()
            readers = [
                threading.Thread(target=_drain, args=(os.fdopen(pipes[1][0], "rb"), out, keep)),
                threading.Thread(target=_drain, args=(os.fdopen(pipes[2][0], "rb"), err, keep)),
            ]
            pipes[1], pipes[2] = (-1, -1), (-1, -1)
            for reader in readers:
                reader.daemon = True
                reader.start()
            # Fed from a thread: artbot's plan can be larger than a pipe holds, and a check that
            # never reads its input must still meet the clock below.
            feeder = threading.Thread(
                target=_feed, args=(os.fdopen(pipes[0][1], "wb"), check.stdin), daemon=True
            )
            pipes[0] = (-1, -1)
            feeder.start()
            timed_out, code = False, None
            try:
                code = self._answer(timeout_s)["exit"]
            except TimeoutError:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(Gone, TimeoutError, KeyError):
                    code = self._answer(30.0)["exit"]
            except (Gone, KeyError):  # it ran, and how it ended is unknown: no second run
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for reader in readers:
                reader.join(timeout=10)
            return Finished(int(code) if code is not None else None, out, err, timed_out)
        finally:
            for pair in pipes:
                for fd in pair:
                    if fd >= 0:
                        with contextlib.suppress(OSError):
                            os.close(fd)

    def _answer(self, timeout_s: float) -> dict[str, Any]:
        self.sock.settimeout(timeout_s)
        try:
            data = self.sock.recv(MAX_MESSAGE)
        except TimeoutError:
            raise
        except OSError as exc:
            raise Gone(f"the zygote stopped answering ({type(exc).__name__})") from None
        if not data:
            raise Gone("the zygote has ended")
        answer = json.loads(data)
        if "error" in answer:
            raise Gone(str(answer["error"])[:200])
        return dict(answer)


def _feed(pipe: Any, data: bytes) -> None:
    with pipe, contextlib.suppress(OSError):
        pipe.write(data)


def zygote_for(python: str, env: Mapping[str, str]) -> Zygote | None:
    """The zygote of this process for ``python`` and ``env`` (less :data:`PER_CHECK`),
    started on first use; None where it cannot be (the caller runs the command as before)."""
    steady = {k: v for k, v in env.items() if k not in PER_CHECK}
    key = (python, *sorted(f"{k}={v}" for k, v in steady.items()))
    if key not in _ZYGOTES:
        try:
            _ZYGOTES[key] = Zygote(python, steady)
        except OSError:
            _ZYGOTES[key] = None
    return _ZYGOTES[key]


def forget(zygote: Zygote) -> None:
    """Stop using ``zygote`` (it has gone): the next check starts a new one."""
    zygote.close()
    for key, known in list(_ZYGOTES.items()):
        if known is zygote:
            del _ZYGOTES[key]


def close_all() -> None:
    for zygote in list(_ZYGOTES.values()):
        if zygote is not None:
            zygote.close()
    _ZYGOTES.clear()


def run(spec: Spec, check: Check) -> Finished | None:
    """``check`` confined in a fork of a warm zygote; None when it cannot go this way (not
    ``python -m`` of this interpreter, or no zygote): then nothing ran."""
    argv = check.argv
    if len(argv) < 3 or argv[0] != sys.executable or argv[1] != "-m":
        return None
    zygote = zygote_for(sys.executable, check.env)
    if zygote is None:
        return None
    try:
        return zygote.run(spec, check)
    except (Gone, OSError, ValueError, KeyError):
        forget(zygote)
        return None


# -- in the zygote -----------------------------------------------------------------------------


def _serve(sock: socket.socket) -> int:
    for name in WARM:
        with contextlib.suppress(Exception):
            __import__(name)
    base_path = list(sys.path[1:])  # without the zygote's own working folder
    # What the interpreter sets in its own environment at start-up (PEP 538's coercion of the
    # C locale), as a freshly started check would have it.
    startup = {k: os.environ[k] for k in ("LC_CTYPE",) if k in os.environ}
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 5)
        except OSError:
            return 0
        if not data:
            return 0
        try:
            request = json.loads(data)
            if len(fds) != 4 + (int(request.get("results_fd", -1)) >= 0):
                raise ValueError(f"{len(fds)} descriptors, not as many as asked")
        except ValueError as exc:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"a request it could not read: {exc}"}).encode())
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os._exit(_check(request, fds, base_path, startup))
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())
        _, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())


def _check(
    request: dict[str, Any], fds: list[int], base_path: list[str], startup: dict[str, str]
) -> int:
    """In the fork: the descriptors in place, everything else closed, then confined."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # Moved above 0-3 first, so that none is overwritten before it is moved there (the
        # results' number, taken last, may overwrite only one already moved).
        fds = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in fds]
        for target, fd in enumerate(fds[:4]):
            os.dup2(fd, target)
        results = int(request.get("results_fd", -1))
        if results >= 0:  # the pipe for the results, at the number the check was told
            os.dup2(fds[4], results)
            os.set_inheritable(results, True)
            os.closerange(4, results)
            os.closerange(results + 1, os.sysconf("SC_OPEN_MAX"))
        else:
            os.closerange(4, os.sysconf("SC_OPEN_MAX"))
        spec = Spec.from_json(request["spec"])
        spec = Spec(spec.scratch, spec.keep, spec.limits, 3, spec.require_process_cap)
        argv, cwd = list(request["argv"]), str(request["cwd"])
        env = {**startup, **dict(request["env"])}
    except (OSError, ValueError, KeyError, TypeError):
        return 125
    return confined(spec, lambda: _run_module(argv, env, cwd, base_path))


def _run_module(argv: list[str], env: dict[str, str], cwd: str, base_path: list[str]) -> int:
    """``python -m MODULE ARGS`` with ``env`` in ``cwd``, in this process."""
    import runpy
    import tempfile
    import traceback

    code = 0
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        tempfile.tempdir = None
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:] = [cwd, *extra, *(p for p in base_path if p not in extra)]
        sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
        sys.argv = [argv[2], *argv[3:]]
        # The first process of a PID namespace gets no signal it does not handle: without a
        # handler, SIGXCPU at the soft CPU cap would pass unseen until SIGKILL at the hard one.
        signal.signal(signal.SIGXCPU, lambda *_: os._exit(EXIT_CPU))
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - as the interpreter would: printed, exit 1
        traceback.print_exc()
        code = 1
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    return code


def main(argv: Sequence[str]) -> int:
    """``python -m artbot.verify.zygote FD``: serve the caller on the socket ``FD``."""
    import ctypes

    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # dies with artbot's
    sock = socket.socket(fileno=int(argv[0]))
    return _serve(sock)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
