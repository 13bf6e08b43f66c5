"""artbot.cli.terminal: help as wide as click's own, measured without importing shutil."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from artbot.cli.terminal import terminal_columns

pytestmark = pytest.mark.e2e

# The same CLI with click's own context, which sizes help with shutil.
CLICKS_OWN = """
import sys, click
import artbot.cli as cli

cli.ArtbotGroup.context_class = click.Context
sys.argv = ["artbot", *sys.argv[1:]]
cli.main()
"""


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "1", "57", "120", "3000"])
def test_columns_are_shutils(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)

    assert terminal_columns() == shutil.get_terminal_size().columns


@pytest.mark.parametrize("columns", [None, "abc", "30", "60", "120"])
@pytest.mark.parametrize("args", [["--help"], ["sync", "--help"], ["verify", "--help"]])
def test_help_is_the_same_as_with_clicks_own_context(columns: str | None, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns

    def run(*command: str) -> str:
        proc = subprocess.run(
            [*command, *args], env=env, capture_output=True, text=True, check=True, timeout=60
        )
        return proc.stdout

    ours = run(sys.executable, "-m", "artbot")
    assert ours == run(sys.executable, "-c", CLICKS_OWN)
    assert ours.startswith("Usage: artbot")
