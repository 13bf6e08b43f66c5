"""#54: artbot used from ART's side. A bad value is named by where it came from (the option
or its environment variable); a command whose extra is not installed says, in one line,
which extra to install, before it runs anything; and `test` and `verify` exit alike on a
release that cannot be fetched."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.extras import NEEDS, extra_modules

REPO = Path(__file__).resolve().parents[2]

# Run in a child Python: a finder first on sys.meta_path that makes MODULES not installed,
# for artbot's own check and for any import alike, then artbot's real entry point.
HIDE = """
import sys
hidden = set(sys.argv[1].split(","))

class Hide:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in hidden:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
sys.argv = ["artbot", *sys.argv[2:]]
from artbot.cli import main
main()
"""


def without(modules: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GH_TOKEN", "GITHUB_TOKEN")}
    return subprocess.run(
        [sys.executable, "-c", HIDE, modules, *args],
        cwd=cwd,
        env=env | {"GITHUB_ACTIONS": ""},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_extras_are_pyprojects() -> None:
    """Each command's extra, as pyproject.toml lists it (read from artbot's metadata)."""
    assert set(extra_modules("repro")) == {"torch", "numpy"}
    assert set(extra_modules("patchtest")) == {"torch", "numpy", "pytest"}
    assert set(NEEDS.values()) <= {"repro", "patchtest"}


def test_verify_art_src_without_torch_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    """`verify --art-src` without torch printed 14 "missing module torch" lines and no hint."""
    (tmp_path / "src" / "art").mkdir(parents=True)
    done = without("torch", "--root", str(REPO), "verify", "--art-src", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: artbot verify needs torch, not installed: ")
    assert "pip install 'artbot[repro] @ SOURCE'" in line and "torch==2.13.0" in line
    assert done.stdout == ""


def test_test_without_pytest_names_pytest(tmp_path: Path) -> None:
    """`artbot test` without pytest answered "could not run" without naming pytest."""
    patch = tmp_path / "fix.diff"
    patch.write_text("--- a/src/art/loss.py\n+++ b/src/art/loss.py\n", encoding="utf-8")
    args = ("--root", str(REPO), "test", "--item", "7", "--patch", str(patch))
    done = without("pytest", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: artbot test needs pytest, not installed: ")
    assert "pip install 'artbot[patchtest] @ SOURCE'" in line


@pytest.mark.parametrize("given", ["abc", "0", "-3", "1.5"])
def test_a_bad_tracking_issue_is_named_by_where_it_came_from(given: str) -> None:
    """`ARTBOT_TRACKING_ISSUE=abc` was reported as `--tracking-issue`."""
    base = ["--root", str(REPO), "sync", "--dry-run"]
    env = {"GH_TOKEN": None, "GITHUB_TOKEN": None, "ARTBOT_TRACKING_ISSUE": given}
    from_env = CliRunner(env=env).invoke(cli, base)
    assert from_env.exit_code == 2
    assert from_env.stderr == (
        f"error: $ARTBOT_TRACKING_ISSUE {given!r}: not an issue number (1 or more)\n"
    )
    from_flag = CliRunner(env={**env, "ARTBOT_TRACKING_ISSUE": None}).invoke(
        cli, [*base, "--tracking-issue", given]
    )
    assert from_flag.exit_code == 2
    assert (
        from_flag.stderr == f"error: --tracking-issue {given!r}: not an issue number (1 or more)\n"
    )


@pytest.mark.network  # pip asks the index for openpipe-art 9.9.9
def test_test_and_verify_exit_alike_on_a_release_that_is_not_there(tmp_path: Path) -> None:
    """`test --release 9.9.9` exited 2 where `verify --release 9.9.9` exited 1: a release
    that cannot be fetched is one kind of failure, exit 1 in both, saying so."""
    patch = tmp_path / "fix.diff"
    patch.write_text(
        "--- a/src/art/loss.py\n+++ b/src/art/loss.py\n@@ -1,1 +1,1 @@\n-a\n+b\n",
        encoding="utf-8",
    )
    env = {"GH_TOKEN": None, "GITHUB_TOKEN": None, "ARTBOT_CACHE_DIR": str(tmp_path / "wheels")}
    runner = CliRunner(env=env)
    tested = runner.invoke(
        cli,
        ["--root", str(REPO), "test", "--item", "7", "--patch", str(patch), "--release", "9.9.9"],
    )
    verified = runner.invoke(cli, ["--root", str(REPO), "verify", "--release", "9.9.9"])
    assert (tested.exit_code, verified.exit_code) == (1, 1), tested.output + verified.output
    assert "9.9.9" in tested.output and "9.9.9" in verified.output


@pytest.mark.parametrize("variable", ["GH_TOKEN", "GITHUB_TOKEN"])
def test_a_token_that_is_not_one_is_named_by_its_variable(variable: str) -> None:
    """The error said "GH_TOKEN or GITHUB_TOKEN" whichever held the bad value."""
    env = {"GH_TOKEN": None, "GITHUB_TOKEN": None, variable: "short1", "GITHUB_ACTIONS": None}
    args = ["--root", str(REPO), "sync", "--tracking-issue", "1", "--api-url", "http://127.0.0.1:9"]
    result = CliRunner(env=env).invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {variable} does not hold a GitHub token"), (
        result.stderr
    )
