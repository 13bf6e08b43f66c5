"""The fork server (tests/forkrun.py) runs a repro as ``python script.py`` does: the same
output, exit code, verdict and timeout handling, through ``artbot repro``'s own runner."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from artbot.reprorun import run_repro
from artbot.settings import Settings
from tests.forkrun import ForkServer

pytestmark = pytest.mark.repro

ROOT = Path(__file__).resolve().parents[1]


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
