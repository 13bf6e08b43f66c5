"""The fork server (tests/helpers/forkrun.py) runs a repro as ``python script.py`` does: the same
output, exit code, verdict and timeout handling, through ``artbot repro``'s own runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from artbot.repro.run import run_repro
from artbot.settings import Settings
from tests.helpers.forkrun import ForkServer

pytestmark = pytest.mark.repro

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[ForkServer]:
    forked = ForkServer({**Settings().child_env, "PYTHONHASHSEED": "0"})
    yield forked
    forked.close()


def test_a_forked_run_prints_what_a_fresh_interpreter_prints(server: ForkServer) -> None:
    script = "repros/item07_tis_fallback.py"
    fresh = run_repro(ROOT, 7, script, timeout_s=120)
    forked = run_repro(ROOT, 7, script, timeout_s=120, spawn=server.spawn)
    assert fresh.status == forked.status == "ok", forked.stderr
    assert forked.stdout == fresh.stdout
    assert (forked.verdict, forked.claims) == (fresh.verdict, fresh.claims)


def test_exit_codes_tracebacks_and_timeouts_come_back(server: ForkServer, tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text("import sys\nprint('x')\nraise RuntimeError('boom')\n")
    (tmp_path / "code.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "slow.py").write_text("import time\nprint('verdict: fixed', flush=True)\n" * 1
                                      + "time.sleep(30)\n")  # fmt: skip
    boom = run_repro(tmp_path, 1, "boom.py", spawn=server.spawn)
    assert (boom.status, boom.exit_code) == ("failed", 1)
    assert "RuntimeError: boom" in boom.stderr and boom.stdout == "x\n"
    assert run_repro(tmp_path, 1, "code.py", spawn=server.spawn).exit_code == 3
    slow = run_repro(tmp_path, 1, "slow.py", timeout_s=0.5, spawn=server.spawn)
    assert slow.status == "timeout" and "verdict: fixed" in slow.stdout
    # The server goes on serving after a timeout.
    assert run_repro(tmp_path, 1, "code.py", spawn=server.spawn).exit_code == 3


def test_a_module_runs_as_python_m_runs_it(server: ForkServer, tmp_path: Path) -> None:
    """``python -m module args`` (how tests/repro/test_export.py runs pytest): the same argv,
    ``sys.path[0]``, ``__name__`` and bytecode setting as a fresh interpreter gives."""
    import subprocess
    import sys

    (tmp_path / "probe.py").write_text(
        "import json, os, sys\n"
        "print(json.dumps([__name__, os.path.relpath(sys.argv[0]), sys.argv[1:],\n"
        "                  sys.path[0] == os.getcwd(), sys.dont_write_bytecode]))\n"
    )
    argv = [sys.executable, "-m", "probe", "a", "--b"]
    for bytecode in ("", "1"):
        env = {**Settings().child_env, "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": bytecode}
        fresh = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True)
        forked = server.spawn(argv, tmp_path, env, timeout_s=60)
        flag = "true" if bytecode else "false"
        want = f'["__main__", "probe.py", ["a", "--b"], true, {flag}]\n'
        assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout), forked.stderr
        assert forked.stdout == want
