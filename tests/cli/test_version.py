"""``artbot --version`` (artbot.cli.version), shell completion, and what start-up loads."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

import artbot
from artbot.cli import cli
from artbot.cli.version import LIBRARIES, catalog_line, installed, version_text

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
ARTBOT = Path(sys.executable).parent / "artbot"

# Runs the CLI in a fresh interpreter, then names the modules it loaded.
PROBE = """
import sys
from artbot.cli import main

sys.argv = ["artbot", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules if m.split(".")[0] in
                ("artbot", "torch", "github", "numpy", "pydantic", "json", "subprocess", "shutil"))
print("LOADED=" + ",".join(loaded), file=sys.stderr)
sys.exit(code)
"""


def loaded_by(*args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("LOADED=")]
    return proc, [m for m in line.removeprefix("LOADED=").split(",") if m]


def test_version_is_the_packages_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])

    assert result.exit_code == 0, result.output
    assert result.output == f"artbot {metadata.version('artbot')}\n"
    # One version in three places: the installed metadata, the package, pyproject.toml.
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert metadata.version("artbot") == artbot.__version__ == project["version"]


def test_version_works_with_a_command_after_it_and_exits_before_running_it() -> None:
    result = CliRunner().invoke(cli, ["--root", "/nonexistent", "--version", "validate"])

    assert result.exit_code == 0, result.output
    assert result.output == f"artbot {artbot.__version__}\n"


def test_verbose_version_names_python_the_libraries_and_the_catalogs_audit() -> None:
    result = CliRunner().invoke(cli, ["--root", str(REPO), "--version", "--verbose"])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"artbot {artbot.__version__}"
    assert f"Python {sys.version.split()[0]}" in lines
    for name in LIBRARIES:
        assert f"{name} {installed(name) or 'not installed'}" in lines
    assert f"PyGithub {metadata.version('PyGithub')}" in lines
    audit = yaml.safe_load((REPO / "findings" / "audit.yaml").read_text(encoding="utf-8"))
    assert lines[-1].endswith(f"audit of {audit['repository']} at {audit['commit']}")


def test_a_missing_library_is_named_as_not_installed() -> None:
    assert installed("artbot-no-such-distribution") is None
    assert installed("click") == metadata.version("click")


def test_the_catalog_line_says_when_there_is_no_catalog_or_it_is_broken(tmp_path: Path) -> None:
    assert catalog_line(tmp_path) == f"catalog: none in {tmp_path} (no findings/)"
    (tmp_path / "findings").mkdir()
    (tmp_path / "findings" / "audit.yaml").write_text("commit: [\n", encoding="utf-8")
    assert "not valid (run `artbot validate`)" in catalog_line(tmp_path)
    # The version is printed all the same.
    assert version_text(tmp_path, verbose=True).startswith(f"artbot {artbot.__version__}\n")


def test_verbose_alone_and_no_command_are_usage_errors() -> None:
    alone = CliRunner().invoke(cli, ["--verbose", "validate"])
    assert alone.exit_code == 2
    assert "--verbose goes with --version" in alone.output
    missing = CliRunner().invoke(cli, ["--debug"])
    assert missing.exit_code == 2
    assert "Missing command." in missing.output


def test_version_loads_neither_pygithub_nor_torch() -> None:
    for args in (["--version"], ["--version", "--verbose"]):
        proc, loaded = loaded_by(*args)
        assert proc.returncode == 0, proc.stderr
        assert not {"torch", "github", "numpy"} & {m.split(".")[0] for m in loaded}, args


def test_help_loads_only_the_command_definitions() -> None:
    # What keeps `artbot --help` within 15 % of `import click` (make bench measures it):
    # no json, subprocess or shutil (artbot.cli.terminal), none of artbot's other modules.
    proc, loaded = loaded_by("--help")

    assert proc.returncode == 0, proc.stderr
    # The commands defined in their own modules are listed from artbot.cli.lazy, not loaded.
    assert loaded == [
        "artbot",
        "artbot.cli",
        "artbot.cli.context",
        "artbot.cli.lazy",
        "artbot.cli.options",
        "artbot.cli.terminal",
    ]


# -- shell completion, as click provides it (README: "Shell completion") --------------------


def complete(shell_var: str, words: str, cword: int) -> str:
    env = {
        **os.environ,
        "_ARTBOT_COMPLETE": shell_var,
        "COMP_WORDS": words,
        "COMP_CWORD": str(cword),
    }
    proc = subprocess.run(
        [str(ARTBOT)], env=env, capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_the_readme_documents_a_completion_script_for_each_shell(shell: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"_ARTBOT_COMPLETE={shell}_source artbot" in readme
    script = complete(f"{shell}_source", "", 0)
    assert "_ARTBOT_COMPLETE" in script and f"{shell}_complete" in script


def test_bash_completes_commands_and_options() -> None:
    assert complete("bash_complete", "artbot sy", 1).split() == ["plain,sync"]
    options = complete("bash_complete", "artbot open --", 2).split()
    assert {"plain,--item", "plain,--dry-run", "plain,--tracking-issue"} <= set(options)
