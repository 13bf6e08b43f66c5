"""CLI conventions: fast start-up without heavy imports, --help everywhere, README coverage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]

PROBE = """
import sys
from artbot.cli import cli

try:
    cli(args=sys.argv[1:], prog_name="artbot")
except SystemExit as exc:
    code = exc.code
heavy = sorted(m for m in ("torch", "github", "numpy", "requests") if m in sys.modules)
print("HEAVY=" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize(
    "args",
    [["--help"], ["validate"], ["list"], ["list", "--json"], ["render", "--item", "7"], ["schema"]],
)
def test_light_commands_do_not_import_torch_or_pygithub(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "--root", str(REPO), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY=\n" in proc.stderr + "\n", proc.stderr


def commands() -> list[str]:
    return sorted(cli.commands)


@pytest.mark.parametrize("name", commands())
def test_every_command_has_help(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0
    assert (cli.commands[name].help or "").strip(), f"{name} has no help text"


@pytest.mark.parametrize("name", commands())
def test_every_command_is_in_the_readme(name: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"artbot {name}" in readme


def test_usage_errors_exit_2() -> None:
    assert CliRunner().invoke(cli, ["--root", str(REPO), "render"]).exit_code == 2
    assert CliRunner().invoke(cli, ["no-such-command"]).exit_code == 2


def test_schema_is_json_schema() -> None:
    import json

    result = CliRunner().invoke(cli, ["schema"])
    schema = json.loads(result.output)
    assert schema["title"] == "Finding"
    assert "expected" in schema["required"]
    assert schema["additionalProperties"] is False


def test_python_dash_m_artbot_is_the_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "artbot", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: artbot ")
    assert "sync" in done.stdout


def test_importing_the_planner_does_not_load_pygithub() -> None:
    probe = "import artbot.run.plan, sys; assert 'github' not in sys.modules, 'github loaded'"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
