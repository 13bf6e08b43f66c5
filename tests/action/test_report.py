"""artbot.action: the composite action's account of an `open`/`sync --json` report."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.action import (
    ACTIONS,
    filed,
    log_lines,
    main,
    open_summary,
    output_file_text,
    outputs,
    plan_lines,
)
from artbot.run.actions import (
    ChecklistUpToDate,
    CloseCopies,
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Comment,
    Create,
    CreateLabel,
    Duplicate,
    EditBody,
    Exists,
    LabelTracking,
    LinkPreset,
    Plan,
    Preset,
    ReadTracking,
    StatusChange,
    UpdateChecklist,
)
from artbot.run.blockwrite import BlockWrite
from artbot.tracking.ownership import Foreign
from artbot.tracking.requests import CarryOutRequest, DropRequest, RevertTick
from artbot.tracking.subissues import (
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    RemoveSubIssue,
    SubIssueHasParent,
    SubIssueRemovedByHand,
    SubIssuesFull,
    SubIssuesUpToDate,
)
from tests.helpers.action_harness import read_outputs

EVERY_KIND = Plan(
    (
        Create(7, "TIS falls back to the policy ratio", ("numerics", "audit")),
        Create(8, "Fixed one", ("audit",), fixed_in="0.5.21"),
        Create(9, "Part fixed", ("audit",), partly_fixed_in="0.5.21"),
        CreateLabel("audit", "c5def5", "filed by artbot"),
        CloseCopies((7, 8, 9)),
        CloseFixed(8, 1113, "0.5.21"),
        StatusChange(9, 1114, None, "partial,fixed=masks"),
        Exists(4, 1112, "open"),
        Preset(1, 1108),
        LinkPreset(2, 1109, ("numerics", "audit")),
        LabelTracking(1111, ("numerics", "audit", "audit:tracking")),
        EditBody(4, 1112),
        CloseDuplicate(4, 1115, 1112),
        Duplicate(4, 1116, 1112),
        ReadTracking(1111, answered=True),
        UpdateChecklist(1111, BlockWrite("- [ ] 4. BF16 logits — #1112\n", None)),
        ChecklistUpToDate(1111),
        Comment(9, 1114, "<!-- hidden -->\nartbot checked openpipe-art 0.5.24"),
        Foreign(7, 1117, "alice", "was written by @alice"),
        AddSubIssue(4, 1112, 1111),
        MoveSubIssue(4, 1112, 1111, after=1110),
        RemoveSubIssue(1112, 1111),
        SubIssueRemovedByHand(5, 1113, 1111),
        SubIssueHasParent(6, 1114, 1111, "#900"),
        SubIssuesFull(1111, (1115,)),
        SubIssuesUpToDate(1111),
        NoSubIssues(1111),
        CloseWhenFixed(9, 1114, "0.5.24"),
        CarryOutRequest(1111, "file=5", "File the issue for item 5"),
        RevertTick(1111, "file=6", "File the issue for item 6", "mallory"),
        DropRequest(1111, "file=4", "File the issue for item 4"),
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


def test_every_kind_of_action_is_printed_as_artbot_prints_it() -> None:
    assert {type(a) for a in EVERY_KIND.actions} == set(ACTIONS.values())
    assert plan_lines(report(EVERY_KIND)["plan"]) == EVERY_KIND.text().splitlines()
    assert plan_lines([]) == ["nothing to do"] == Plan().text().splitlines()


def test_an_action_this_artbot_does_not_know_is_named_as_it_came() -> None:
    lines = plan_lines([{"action": "Reopen", "item": 7, "issue": 1112}])
    assert lines == ['Reopen: {"item": 7, "issue": 1112}']
    changed_shape = plan_lines([{"action": "EditBody", "item": 7}])  # a field missing
    assert changed_shape == ['EditBody: {"item": 7}']


def test_filed_is_the_creates_that_have_an_issue_now() -> None:
    issues = {"7": {"number": 1117, "state": "open", "url": "u"}}
    issues |= {"4": {"number": 1112, "state": "open", "url": "u"}}  # there before: Exists
    done = report(EVERY_KIND, issues=issues)
    assert filed(done) == [1117]
    assert filed(report(EVERY_KIND)) == []  # a create that did not happen files nothing

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


def test_the_log_is_the_plan_then_the_results_then_warnings_annotated_in_actions() -> None:
    data = report(
        Plan((Exists(4, 1112, "open"), ChecklistUpToDate(1111))),
        done=["labelled #1108 (numerics, audit)"],
        warnings=["item 4: #1112 was edited by hand, 50% of it"],
    )
    assert log_lines(data, in_actions=True) == [
        ("plan:", False),
        ("  item 4: already filed as #1112 (open)", False),
        ("  tracking issue #1111: checklist up to date", False),
        ("labelled #1108 (numerics, audit)", False),
        ("warning: item 4: #1112 was edited by hand, 50% of it", True),
        ("::warning::item 4: #1112 was edited by hand, 50%25 of it", False),
    ]
    assert all("::warning::" not in line for line, _ in log_lines(data, in_actions=False))


def test_open_summary_lists_what_was_done_and_the_warnings() -> None:
    data = report(
        EVERY_KIND,
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


def test_main_prints_redacted_lines_and_writes_outputs_and_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GH_TOKEN", "ghp_secretvalue")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    path = tmp_path / "report.json"
    path.write_text(
        json.dumps(report(Plan(), done=["did one"], warnings=["echoed ghp_secretvalue back"])),
        encoding="utf-8",
    )
    out, summary = tmp_path / "output", tmp_path / "summary.md"

    args = ["--command", "open", "--report", str(path), "--outputs", str(out)]
    assert main([*args, "--summary", str(summary)]) == 0

    printed = capsys.readouterr()
    assert "ghp_secretvalue" not in printed.out + printed.err
    assert "::warning::echoed *** back" in printed.out
    assert "warning: echoed *** back" in printed.err
    assert read_outputs(out) == {
        "filed": "",
        "changed": '["did one"]',
        "issues": "{}",
        "plan": "[]",
        "tracking-issue-url": "",
    }
    assert summary.read_text(encoding="utf-8").startswith("### artbot open\n\n- did one\n")


def test_main_for_sync_and_verify_leaves_the_summary_to_them(tmp_path: Path) -> None:
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    for command in ("sync", "verify"):
        args = ["--command", command, "--outputs", str(out), "--summary", str(summary)]
        assert main(args) == 0
    assert not summary.exists()
    assert read_outputs(out) == {"filed": "", "changed": "[]"}
