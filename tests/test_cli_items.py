"""``--item N`` (repeatable) and ``--all``: parsed once (artbot.cli.item_options) for render,
repro and open, so the three commands answer a bad selection alike: exit 2, nothing done."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.sandbox import GitHubSandbox

REPO = Path(__file__).resolve().parents[1]


def run(*args: str) -> tuple[int, str]:
    result = CliRunner(env={"GH_TOKEN": None, "GITHUB_TOKEN": None}).invoke(
        cli, ["--root", str(REPO), *args]
    )
    return result.exit_code, result.output + result.stderr


@pytest.mark.parametrize("command", ["render", "repro", "open"])
def test_neither_or_both_is_a_usage_error(command: str) -> None:
    for args in ((), ("--item", "7", "--all")):
        code, out = run(command, *args)
        assert code == 2 and "give --item N (repeatable) or --all" in out, (args, out)


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
    titles = [line for line in out.splitlines() if line.startswith("# ")]
    assert [t[:12] for t in titles] == ["# Unclamped ", "# Truncated "], titles
