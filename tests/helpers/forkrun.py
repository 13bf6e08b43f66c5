"""Run repro scripts as ``python script.py`` would, forked from an interpreter that has already
imported torch: the suite runs every repro once per CPU kernel, and importing torch is about
1.2 s of CPU each time, a third of most scripts' cost.

A :class:`ForkServer` is one ``python`` started with the environment the scripts need at start-up
(``ATEN_CPU_CAPABILITY``, ``PYTHONHASHSEED``: both are read when the interpreter or torch starts,
so a server serves one kernel). For each script it forks a child that changes to the script's
working directory, takes the run's environment, points stdin at /dev/null and stdout/stderr at
files, and runs the file with :func:`runpy.run_path` as ``__main__`` (``sys.argv`` and
``sys.path[0]`` as the interpreter sets them), or for ``python -m module ...`` the module with
:func:`runpy.run_module`. Its :meth:`spawn` has the signature of
:data:`artbot.repro.run.Spawn`, so :func:`artbot.repro.run.run_repro` builds the result exactly as
for ``artbot repro`` (token-free environment, verdict parsing, status).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# At start-up: the given environment variables fixed for every run, then torch imported once.
SERVER = r"""
import importlib, json, os, runpy, sys, traceback
for name in sys.argv[1:]:  # shared by every child (fork copies the imported modules)
    importlib.import_module(name)

for line in sys.stdin:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.chdir(req["cwd"])
            os.environ.clear()
            os.environ.update(req["env"])
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            for fd, path in ((1, req["out"]), (2, req["err"])):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
            # What the interpreter decides at start-up from the environment it is given.
            sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
            argv = list(req["argv"])
            if argv[0] == "-m":  # python -m module args: sys.path[0] is the working directory
                sys.argv = argv[1:]
                sys.path[0] = os.getcwd()
                runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
            else:
                script = os.path.abspath(argv[0])
                sys.argv = argv
                sys.path[0] = os.path.dirname(script)
                runpy.run_path(script, run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    print(json.dumps({"pid": pid}), flush=True)
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)
"""

# The ``run_script`` fixture of tests/conftest.py: (script, *args, cwd=, timeout=, env=).
RunScript = Callable[..., "subprocess.CompletedProcess[str]"]

# What a server fixes at start-up; a run asking for other values of these is refused.
STARTUP = ("ATEN_CPU_CAPABILITY", "PYTHONHASHSEED")


class ForkServer:
    def __init__(self, env: dict[str, str], preload: tuple[str, ...] = ("torch",)) -> None:
        self.startup = {k: env[k] for k in STARTUP if k in env}
        self._dir = tempfile.TemporaryDirectory(prefix="artbot-forkrun-")
        self._proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._runs = 0
        self._buffer = b""

    def _line(self, timeout_s: float | None = None) -> dict[str, int] | None:
        """The server's next answer; None when ``timeout_s`` passes first. Read unbuffered
        (os.read), so select() never waits on a line already read into a buffer."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("the fork server exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        answer: dict[str, int] = json.loads(line)
        return answer

    def spawn(
        self, argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float
    ) -> subprocess.CompletedProcess[str]:
        """One script run, as :func:`subprocess.run` with ``capture_output`` would give it."""
        asked = {k: env[k] for k in STARTUP if k in env}
        assert asked == self.startup, f"this server runs with {self.startup}, not {asked}"
        assert argv[0] == sys.executable, "the server runs scripts with its own interpreter"
        self._runs += 1
        out, err = (Path(self._dir.name) / f"{self._runs}.{s}" for s in ("out", "err"))
        request = {"argv": argv[1:], "cwd": str(cwd), "env": env, "out": str(out), "err": str(err)}
        assert self._proc.stdin is not None
        self._proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
        self._proc.stdin.flush()
        started = self._line()
        assert started is not None
        done = self._line(timeout_s)
        if done is None:  # the script ran over: stop it, collect the server's answer, say so
            os.kill(started["pid"], signal.SIGKILL)
            self._line()
            raise subprocess.TimeoutExpired(argv, timeout_s, self._read(out), self._read(err))
        return subprocess.CompletedProcess(argv, done["code"], self._read(out), self._read(err))

    @staticmethod
    def _read(path: Path) -> str:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
        self._dir.cleanup()
