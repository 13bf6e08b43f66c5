"""``--item N`` (repeatable) and ``--all``: parsed once (artbot.cli_options.item_options) for
render, repro and open, so the three commands answer a bad selection alike: one line, exit 2,
nothing done."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.sandbox import GitHubSandbox

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"GH_TOKEN": None, "GITHUB_TOKEN": None}).invoke(
        cli, ["--root", str(REPO), *args]
    )
    return result.exit_code, result.output + result.stderr


@pytest.mark.parametrize("command", ["render", "repro", "open"])
def test_neither_or_both_is_one_line_and_exit_2(command: str) -> None:
    runner = CliRunner(env={"GH_TOKEN": None, "GITHUB_TOKEN": None})
    for args, said in [
        ((), "error: give --item N (repeatable) or --all"),
        (
            ("--item", "4", "--all"),
            "error: --item and --all conflict: give one of them, not both",
        ),
    ]:
        result = runner.invoke(cli, ["--root", str(REPO), command, *args])
        assert (result.exit_code, result.stdout, result.stderr) == (2, "", said + "\n")


@pytest.mark.parametrize("command", ["render", "repro"])
def test_an_unknown_item_is_exit_2_before_anything_runs(command: str) -> None:
    code, out = run(command, "--item", "7", "--item", "99")
    assert code == 2 and "no finding with item 99" in out
    assert "Truncated importance sampling" not in out  # item 7 was not rendered first


def test_open_with_an_unknown_item_sends_no_request(sandbox: GitHubSandbox) -> None:
    sandbox.create_repo("OpenPipe", "ART")
    sandbox.requests.clear()
    code, out = run(
        "open", "--item", "99", "--dry-run", "--api-url", sandbox.api_url, "--repo", "OpenPipe/ART"
    )
    assert code == 2 and "no finding with item 99" in out
    assert sandbox.requests.snapshot() == []


def test_render_takes_several_items_in_the_order_given() -> None:
    code, out = run("render", "--item", "8", "--item", "7")
    assert code == 0, out
    lines = out.splitlines()
    # A title is followed by its labels (a "# " line inside a python block is a comment).
    titles = [t for i, t in enumerate(lines[:-2]) if lines[i + 2].startswith("Labels:")]
    assert [t[:12] for t in titles] == ["# Unclamped ", "# Truncated "], titles
