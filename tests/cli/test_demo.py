"""#40.5: `artbot demo` shows its result first (the tracking checklist, its sub-issues, the
issues filed) and the issue bodies after it, or in files with --out; its help says what it
files (7, 9 and 801, then 5 by the request it ticks)."""

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


def test_the_demo_shows_the_checklist_and_sub_issues_before_the_bodies() -> None:
    code, out = demo()
    assert code == 0, out
    checklist = out.index("=== the checklist in tracking issue #1111")
    sub_issues = out.index("=== the sub-issues of tracking issue #1111")
    filed = out.index("=== the issues filed")
    first_body = out.index("=== item 7: issue #")
    assert checklist < sub_issues < filed < first_body
    listed = out[filed:first_body].splitlines()
    assert [line.split(":")[0] for line in listed if line.startswith("item ")] == [
        "item 7",
        "item 9",
        "item 801",
        "item 5",
    ]
    assert out.count("=== item ") == 4  # each body once, after the result


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
    text = " ".join(runner.invoke(cli, ["export-tests", "--help"]).stdout.split())
    assert "strict xfail" in text and "--force" in text
