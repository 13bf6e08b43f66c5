"""The regression tests artbot exports for ART's own suite: each fails on the audited release
(openpipe-art 0.5.20) and passes on 0.5.21, which fixed items 7, 8 and 10.

They run in a subprocess with pytest against an unpacked wheel. ART's dependencies are not
installed here, so a harness conftest (artbot's, never exported) makes ``import art.x`` load
the single file ``art/x.py`` with artbot's import isolation, as ``artbot verify`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.export import regression_tests
from tests.wheels import default_wheels

pytestmark = pytest.mark.network

REPO = Path(__file__).resolve().parent.parent
HARNESS = """\
import os
from pathlib import Path

from artbot.verify.isolation import ArtModules


_art = ArtModules(Path(os.environ["ARTBOT_ART_PACKAGE"]))
_art.__enter__()
"""


def art_package(version: str) -> Path:
    return default_wheels().package(version)


def run_exported(tmp_path: Path, version: str) -> subprocess.CompletedProcess[str]:
    package = art_package(version)
    out = tmp_path / version
    result = CliRunner().invoke(cli, ["--root", str(REPO), "export-tests", "--out", str(out)])
    assert result.exit_code == 0, result.output
    (out / "conftest.py").write_text(HARNESS)
    env = {**os.environ, "ARTBOT_ART_PACKAGE": str(package), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=out,
        timeout=300,
        check=False,
    )


def outcomes(stdout: str) -> dict[str, str]:
    """test file -> 'failed' if any of its tests failed, else 'passed'."""
    got: dict[str, str] = {}
    for line in stdout.splitlines():
        for word in ("PASSED", "FAILED", "ERROR"):
            if line.startswith(word + " "):
                name = line.split()[1].split("::")[0].rsplit("/", 1)[-1]
                if word != "PASSED" or got.get(name) != "failed":
                    got[name] = "passed" if word == "PASSED" else "failed"
    return got


def test_export_writes_tests_that_import_art_and_never_artbot(tmp_path: Path) -> None:
    tests = regression_tests(REPO)
    assert {t.name.split("_")[1] for t in tests} >= {"item07", "item08", "item10"}
    for test in tests:
        text = test.read_text()
        assert "from art." in text and "artbot" not in text, test


def test_regression_tests_fail_on_0_5_20_and_pass_on_0_5_21(tmp_path: Path) -> None:
    before = run_exported(tmp_path, "0.5.20")
    after = run_exported(tmp_path, "0.5.21")
    names = {t.name for t in regression_tests(REPO)}
    assert outcomes(before.stdout) == dict.fromkeys(names, "failed"), before.stdout[-3000:]
    assert outcomes(after.stdout) == dict.fromkeys(names, "passed"), after.stdout[-3000:]
    assert after.returncode == 0
