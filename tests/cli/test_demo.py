"""#40.5, #54: `artbot demo` ends with its result (the tracking checklist, its sub-issues,
the issues filed, the requests made), after the issue bodies (or the files --out wrote), so
that a terminal's last screen shows it, not the end of a body's markers; its help says what it
files (7, 9 and 801, then 5 by the request it ticks) and what needs the network."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from artbot.cli import cli

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def demo(*args: str) -> tuple[int, str]:
    env = {"GH_TOKEN": None, "GITHUB_TOKEN": None, "GITHUB_ACTIONS": None}
    result = CliRunner(env=env).invoke(cli, ["--root", str(REPO), "demo", *args])
    return result.exit_code, result.stdout


def test_the_demo_ends_with_the_checklist_sub_issues_and_issues_filed() -> None:
    code, out = demo()
    assert code == 0, out
    first_body = out.index("=== item 7: issue #")
    checklist = out.index("=== the checklist in tracking issue #1111")
    sub_issues = out.index("=== the sub-issues of tracking issue #1111")
    filed = out.index("=== the issues filed")
    assert first_body < checklist < sub_issues < filed
    listed = out[filed:].splitlines()
    assert [line.split(":")[0] for line in listed if line.startswith("item ")] == [
        "item 7",
        "item 9",
        "item 801",
        "item 5",
    ]
    assert out.count("=== item ") == 4  # each body once, before the result
    assert out.rstrip().splitlines()[-1].startswith("=== requests made: ")
    assert "<!-- artbot:body:end -->" not in out[checklist:]


def test_with_out_the_bodies_are_files_and_the_result_is_all_that_is_printed(
    tmp_path: Path,
) -> None:
    code, out = demo("--out", str(tmp_path))
    assert code == 0, out
    assert "=== item " not in out and "=== the checklist in tracking issue #1111" in out
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["05.md", "07.md", "09.md", "801.md"]
    assert (tmp_path / "07.md").read_text(encoding="utf-8").startswith("# Truncated importance")
    assert out.count("wrote ") == 4


def test_demo_and_export_tests_help_say_what_they_do() -> None:
    runner = CliRunner()
    text = " ".join(runner.invoke(cli, ["demo", "--help"]).stdout.split())
    assert "7, 9 and 801" in text and "item 5" in text
    assert "the demo's one use of the network" in text and "ends with the result" in text
    text = " ".join(runner.invoke(cli, ["export-tests", "--help"]).stdout.split())
    assert "strict xfail" in text and "--force" in text
