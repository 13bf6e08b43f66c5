"""CLI conventions: fast start-up without heavy imports, --help everywhere (summaries whole,
open and sync saying where the token comes from and what they write), README coverage of every
command and option."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from artbot.cli import cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

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
    """Every command, those loaded only when asked for (artbot.cli.lazy) included."""
    return cli.list_commands(click.Context(cli))


def command(name: str) -> click.Command:
    found = cli.get_command(click.Context(cli), name)
    assert found is not None, name
    return found


@pytest.mark.parametrize("name", commands())
def test_every_command_has_help(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0
    assert (command(name).help or "").strip(), f"{name} has no help text"


@pytest.mark.parametrize("name", commands())
def test_every_command_is_in_the_readme(name: str) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert f"artbot {name}" in readme


def every_command() -> Iterator[tuple[str, click.Command]]:
    """Each command, subcommands of a group included, by its full name (``verify changes``)."""

    def walk(group: click.Group, name: str) -> Iterator[tuple[str, click.Command]]:
        yield name, group
        for sub in group.list_commands(click.Context(group)):
            child = group.get_command(click.Context(group), sub)
            assert child is not None, sub
            if isinstance(child, click.Group):
                yield from walk(child, f"{name} {sub}")
            else:
                yield f"{name} {sub}", child

    return walk(cli, "artbot")


def test_every_option_is_in_the_readme() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    missing = [
        f"{name} {opt}"
        for name, command in every_command()
        for param in command.params
        for opt in param.opts
        if opt.startswith("--") and opt not in readme
    ]
    assert missing == []


@pytest.mark.parametrize("group", [[], ["verify"]], ids=["artbot", "verify"])
def test_no_summary_is_cut_in_an_80_column_terminal(group: list[str]) -> None:
    """`artbot --help` lists each command with its short help whole: click cuts a summary that
    does not fit with "...", so every command says what it does in a line that fits."""
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-m", "artbot", *group, "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=True,
    )
    listed = done.stdout.split("\nCommands:\n", 1)[1].splitlines()
    parent = command(group[0]) if group else cli
    assert isinstance(parent, click.Group)
    assert len(listed) == len(parent.list_commands(click.Context(parent)))
    for line in listed:
        name, summary = line.split(None, 1)
        child = parent.get_command(click.Context(parent), name)
        assert child is not None and summary == child.short_help, line
        assert not summary.endswith("...") and summary[-1] in ".?)", line


@pytest.mark.parametrize("name", ["open", "sync"])
def test_open_and_sync_help_answer_the_usual_questions(name: str) -> None:
    text = " ".join(CliRunner().invoke(cli, [name, "--help"]).output.split())
    for said in (
        "The token comes from $GH_TOKEN, else $GITHUB_TOKEN",
        "--dry-run prints the plan",
        "sub-issue",
        "closed",
        "OWNER/NAME or its URL",
    ):
        assert said in text, said


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
