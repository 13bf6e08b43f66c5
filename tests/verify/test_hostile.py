"""#53: a hostile release (or patch) attacks the check from inside the confinement, and each
attack, run for real against ``verify_code_apart``, holds.

Each test crafts ``art/loss.py`` (item 7's check imports it) to attack at import, as a wheel's
code would; nothing here is a mock of the attack.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from artbot.verify.code import CodeStatus
from tests.helpers.confine import ENV, catalog, confined_here, run_apart, tree_with

pytestmark = [pytest.mark.e2e, pytest.mark.repro]

FORGED = {
    "results": [
        {
            "item": 7,
            "status": "fixed",
            "detail": "forged by the release",
            "claims": {"policy-ratio-applied-twice": {"verdict": "fixed", "detail": "forged"}},
        }
    ]
}

# Attack 3: once the check has written its results, the file is replaced by a link to a file
# outside the confinement that artbot's process can read (here: one holding a forged verdict).
SYMLINK = """
import os, pathlib
target = {target!r}
write_text = pathlib.Path.write_text
def swap(self, *args, **kwargs):
    n = write_text(self, *args, **kwargs)
    if self.name == "results.json":
        os.remove(self)
        os.symlink(target, self)
    return n
pathlib.Path.write_text = swap
"""


def test_a_results_file_replaced_by_a_link_is_not_followed(place: Path) -> None:
    forged = place / "forged.json"
    forged.write_text(json.dumps(FORGED))
    forged.chmod(0o644)
    tree = tree_with(place / "t", SYMLINK.format(target=str(forged)))
    [result], said = run_apart(place, tree)
    confined_here(said)
    assert result.status is CodeStatus.could_not_run, result
    assert "forged" not in result.detail and "no results" in result.detail


# The release rewrites the results it hands back (the check runs in its process).
REWRITE = """
import json, pathlib
write_text = pathlib.Path.write_text
def rewrite(self, text, *args, **kwargs):
    if self.name == "results.json":
        data = json.loads(text)
        change = {change}
        change(data)
        text = json.dumps(data)
    return write_text(self, text, *args, **kwargs)
pathlib.Path.write_text = rewrite
"""
COMMANDS = "lambda d: d['results'][0].update(detail='``` ##[add-mask]x ::stop-commands::tok')"


def test_workflow_commands_and_fences_in_the_checks_text_reach_no_log_line(place: Path) -> None:
    """Attack 8: ``##[`` and ``::`` anywhere in a line of verify's log, and a detail that
    starts with a fence, would be read by the runner or close the step summary's block."""
    root = catalog(place)
    tree = tree_with(place / "t", REWRITE.format(change=COMMANDS))
    env = {**ENV, "HOME": str(place), "GITHUB_ACTIONS": "true"}
    verify = subprocess.run(
        [sys.executable, "-m", "artbot", "--root", str(root), "verify", "--art-src", str(tree)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if "ran confined" not in verify.stdout + verify.stderr:
        pytest.skip(f"no confinement here: {verify.stderr[-300:]}")
    lines = (verify.stdout + verify.stderr).splitlines()
    assert any("add-mask" in line for line in lines), lines  # the detail is shown, made inert
    for line in lines:
        assert "##[" not in line and "::" not in line, line
        assert not line.lstrip().startswith(("```", "~~~")), line


def _fix_lines(look_for: str) -> str:
    """A change that makes item 7's result "fixed", resting on 400 invented fix lines."""
    lines = [{"path": "art/loss.py", "line": 1, "look_for": look_for}] * 400
    claim = {"verdict": "fixed", "detail": "x", "method": "ran", "fix": {"lines": lines}}
    claims = {"policy-ratio-applied-twice": claim}
    result = {"item": 7, "status": "fixed", "detail": "x", "claims": claims}
    return f"lambda d: d.update(results=[{result!r}])"


@pytest.mark.parametrize("look_for", ["invented by the release", ""])
def test_fix_lines_the_release_invents_or_piles_up_are_refused_here(
    place: Path, look_for: str
) -> None:
    """Attack 7: a release's code recorded 400 invented "fix" lines per claim. Each line is
    checked again in artbot's process against the release, and a claim cites at most 8."""
    tree = tree_with(place / "t", REWRITE.format(change=_fix_lines(look_for)))
    [result], said = run_apart(place, tree)
    confined_here(said)
    assert result.status is CodeStatus.could_not_run, result
    assert not result.claims and "no valid results" in result.detail
