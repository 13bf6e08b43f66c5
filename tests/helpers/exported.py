"""Running artbot's exported regression tests in a child process (tests/repro/): export them,
put the harness conftest beside them (tests/fixtures/export/harness_conftest.py) and run pytest
on an unpacked ART tree, without the token variables in its environment (the tree's code runs
there); forked from one interpreter that has imported torch and pytest (:mod:`.forkrun`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from artbot.cli import cli
from artbot.settings import TOKEN_VARIABLES
from tests.helpers.forkrun import ForkServer
from tests.helpers.wheels import default_wheels

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "tests" / "fixtures" / "export" / "harness_conftest.py"


def art_package(version: str) -> Path:
    return default_wheels().package(version)


def exported_env() -> dict[str, str]:
    """The exported tests' environment: this one without the token variables."""
    env = {k: v for k, v in os.environ.items() if k not in TOKEN_VARIABLES}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_exported(
    server: ForkServer,
    tmp_path: Path,
    version: str,
    package: Path | None = None,
    only: set[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Export the tests (``only``: just these files) and run them on ``package``."""
    package = package or art_package(version)
    out = tmp_path / version
    result = CliRunner().invoke(cli, ["--root", str(REPO), "export-tests", "--out", str(out)])
    assert result.exit_code == 0, result.output
    for test in out.glob("test_*.py"):
        if only is not None and test.name not in only:
            test.unlink()
    shutil.copyfile(HARNESS, out / "conftest.py")
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(out)]
    env = {**exported_env(), "ARTBOT_ART_PACKAGE": str(package)}
    return server.spawn(argv, out, env, timeout_s=300)


def outcomes(stdout: str) -> dict[str, str]:
    """test file -> 'failed' if any of its tests failed or erred (a strict XPASS is a failure),
    else 'xfailed' if every one is an expected failure, else 'passed'."""
    words = {"PASSED": "passed", "FAILED": "failed", "ERROR": "failed", "XFAIL": "xfailed"}
    seen: dict[str, set[str]] = {}
    for line in stdout.splitlines():
        word = line.split(" ", 1)[0]
        if word in words and len(line.split()) > 1:
            name = line.split()[1].split("::")[0].rsplit("/", 1)[-1]
            seen.setdefault(name, set()).add(words[word])
    return {
        name: "failed" if "failed" in kinds else "passed" if "passed" in kinds else "xfailed"
        for name, kinds in seen.items()
    }
