"""artbot.action: the command line the action's inputs come to (a table of values), and the
step's outputs and summary made from a run's report."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.action import action_args, filed, open_summary, output_file_text, outputs
from artbot.errors import BadInput
from artbot.run.actions import Create, Exists, Plan
from artbot.settings import Settings
from tests.helpers.action_harness import read_outputs

PLAN = Plan(
    (
        Create(7, "TIS falls back to the policy ratio", ("numerics", "audit")),
        Create(8, "Fixed one", ("audit",), fixed_in="0.5.21"),
        Exists(4, 1112, "open"),
    )
)


def report(plan: Plan, **extra: Any) -> dict[str, Any]:
    """A report as `--json` prints it (JSON in, JSON out)."""
    data: dict[str, Any] = {
        "plan": plan.as_json(),
        "done": [],
        "warnings": [],
        "issues": {},
        "checklist": None,
    }
    return json.loads(json.dumps({**data, **extra}))


def test_filed_is_the_creates_that_have_an_issue_now() -> None:
    issues = {"7": {"number": 1117, "state": "open", "url": "u"}}
    issues |= {"4": {"number": 1112, "state": "open", "url": "u"}}  # there before: Exists
    done = report(PLAN, issues=issues)
    assert filed(done) == [1117]
    assert filed(report(PLAN)) == []  # a create that did not happen files nothing

    values = outputs(done)
    assert values["filed"] == "1117"
    assert json.loads(values["issues"]) == issues
    assert json.loads(values["plan"]) == done["plan"]
    assert outputs(None) == {"filed": "", "changed": "[]"}


@given(
    st.dictionaries(
        st.text(st.characters(categories=["L", "N"]) | st.just("-"), min_size=1, max_size=12),
        st.text(st.characters(blacklist_characters="\r", blacklist_categories=["Cs"])),
        max_size=4,
    )
)
def test_outputs_read_back_as_written_whatever_they_hold(values: dict[str, str]) -> None:
    # Newlines, `=`, `<<` and anything like a delimiter: the runner reads back each value.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "output"
        path.write_text(output_file_text(values), encoding="utf-8")
        assert read_outputs(path) == values


def test_open_summary_lists_what_was_done_and_the_warnings() -> None:
    data = report(
        PLAN,
        done=["item 7: filed #1117 https://example.test/7", "updated the checklist in #1111"],
        warnings=["a warning"],
    )
    assert open_summary(data) == (
        "### artbot open\n\n"
        "- item 7: filed #1117 https://example.test/7\n"
        "- updated the checklist in #1111\n\n"
        "> [!WARNING]\n> a warning\n"
    )
    assert "Nothing was filed or changed." in open_summary(report(Plan()))
    assert open_summary(None).startswith("### artbot open (dry run)\n\nNothing was written")


def argv(tmp_path: Path, **inputs: str) -> tuple[str, ...]:
    """The command line ``artbot action`` runs for these inputs (`uses: ./`: the workspace is
    the action's folder)."""
    env = {f"INPUT_{k.upper()}": v for k, v in inputs.items()}
    env |= {"GITHUB_WORKSPACE": str(tmp_path), "GITHUB_ACTION_PATH": str(tmp_path)}
    run = action_args(Settings.from_env(env))
    assert run.argv[:2] == ("--root", str(tmp_path))
    return run.argv[2:]


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"command": "open", "items": "4, 5 6"}, ("open", "--item=4", "--item=5", "--item=6")),
        ({"command": "open", "item": "7"}, ("open", "--item=7")),
        ({"command": "open", "items": "all"}, ("open", "--all")),
        ({"command": "open", "items": "x;y"}, ("open", "--item=x;y")),  # click refuses it
        ({"command": "sync", "max_writes": "3"}, ("sync", "--max-writes=3")),
        ({"command": "sync", "tracking_issue": "12"}, ("sync", "--tracking-issue=12")),
        ({"command": "sync", "release": "latest"}, ("sync", "--verify", "latest")),
        ({"command": "sync", "release": "off"}, ("sync",)),
        ({"command": "sync", "dry_run": "true"}, ("sync", "--dry-run")),
        ({"command": "verify"}, ("verify", "--release", "latest")),
        (
            {"command": "verify", "release": "0.5.21", "record": "true"},
            ("verify", "--release", "0.5.21", "--record"),
        ),
        ({"command": "test"}, ("answer-tests",)),
    ],
)
def test_the_inputs_come_to_one_command_line(
    tmp_path: Path, inputs: dict[str, str], expected: tuple[str, ...]
) -> None:
    got = argv(tmp_path, **inputs)
    if "--cache" in got:  # open and sync keep their ETag cache in the workspace
        at = got.index("--cache")
        assert got[at + 1] == str(tmp_path / ".artbot" / "cache.json")
        got = got[:at] + got[at + 2 :]
    assert got == expected


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"command": "deploy"}, "command: 'deploy': give open, sync, verify or test"),
        ({"command": "open"}, 'items: give item numbers (separated by spaces or commas) or "all"'),
        ({"command": "sync", "dry_run": "yes"}, "dry-run: 'yes': give true or false"),
        ({"command": "verify", "record": "1"}, "record: '1': give true or false"),
        ({"command": "verify", "release": "off"}, "verify needs a release"),
        ({"command": "sync", "findings_path": "../elsewhere"}, "findings-path: '../elsewhere'"),
        ({"command": "sync", "status": "/etc"}, "status: '/etc': give a folder inside"),
    ],
)
def test_an_input_no_option_checks_is_refused_by_name(
    tmp_path: Path, inputs: dict[str, str], message: str
) -> None:
    with pytest.raises(BadInput, match=re.escape(message)):
        argv(tmp_path, **inputs)


def test_verify_runs_in_a_process_that_holds_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess

    from artbot import action

    seen: list[dict[str, str]] = []

    def fake_run(argv: list[str], *, env: dict[str, str], **_: Any) -> Any:
        seen.append(env)
        return subprocess.CompletedProcess(argv, 0, "checked\n", "")

    monkeypatch.setattr(action.subprocess, "run", fake_run)
    out = tmp_path / "output"
    env = {
        "INPUT_COMMAND": "verify",
        "GH_TOKEN": "ghp_workflowtoken0123456789",
        "GITHUB_TOKEN": "ghs_jobtoken0123456789",
        "GITHUB_WORKSPACE": str(tmp_path),
        "GITHUB_ACTION_PATH": str(tmp_path),
        "GITHUB_OUTPUT": str(out),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    assert action.run_action(Settings.from_env(env)) == 0
    [child] = seen
    assert not {"GH_TOKEN", "GITHUB_TOKEN"} & set(child)
    assert read_outputs(out) == {"filed": "", "changed": "[]"}
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert summary == "### artbot verify\n\n```text\nchecked\n```\n"


def test_used_by_another_repository_the_action_reads_a_copy_of_its_own_records(
    tmp_path: Path,
) -> None:
    """A value: what is copied where, decided before anything is copied or run."""
    action, workspace, temp = tmp_path / "action", tmp_path / "workspace", tmp_path / "temp"
    (workspace / "artbot-status").mkdir(parents=True)
    env = {
        "INPUT_COMMAND": "sync",
        "INPUT_STATUS": "artbot-status",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action),
        "GITHUB_ACTION_REPOSITORY": "example/artbot",
        "RUNNER_TEMP": str(temp),
    }
    run = action_args(Settings.from_env(env))
    assert (run.root, run.copy_from, run.tool) == (
        temp / "artbot-records",
        action,
        "example/artbot",
    )
    assert run.status == (workspace / "artbot-status").resolve()
    assert not (temp / "artbot-records").exists()  # nothing copied yet
