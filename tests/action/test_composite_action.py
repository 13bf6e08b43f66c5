"""The composite action (action.yml), run as sync.yml and open.yml call it, against the sandbox.

tests/helpers/action_harness.py runs the action's steps as Actions would; these tests take each
workflow's `uses: ./` step as it stands: a workflow, the action and the CLI it calls cannot
drift apart unnoticed.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from artbot.settings import CACHE_VARIABLE
from tests.helpers.action_harness import (
    NAME,
    OWNER,
    REPO,
    TOKEN,
    calls,
    direct,
    open_context,
    recorder,
    records,
    refused,
    run_uses,
    schedule_context,
    titles,
    writes,
)
from tests.helpers.wheels import INDEX_SHA256

pytestmark = pytest.mark.e2e

CHECKLIST_START = "<!-- artbot:checklist:start -->"
CHECKLIST_END = "<!-- artbot:checklist:end -->"
SUMMARY_HEADER = "| Item | Issue | State | What changed |"

# -- sync.yml's `uses: ./` with command: sync --------------------------------------------------


def test_sync_fills_the_checklist_writes_the_summary_and_its_outputs(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]

    run = run_uses("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))

    assert run.returncode == 0, run.stdout + run.stderr
    assert TOKEN not in run.stdout + run.stderr
    body = sandbox.get_issue(OWNER, NAME, tracking)["body"]
    assert CHECKLIST_START in body and CHECKLIST_END in body, "no checklist in the tracking issue"
    start, end = body.index(CHECKLIST_START), body.index(CHECKLIST_END)
    block = body[start:end]
    for record in records():
        link = f" — #{record['issue']}" if record.get("issue") else ""
        # Its line names the item (by its title, or by what remains when partly fixed) and links
        # its issue; the wording is the checklist golden's to pin.
        line = re.compile(rf"^- \[[ x]\] {record['item']}\. [^\n]+{re.escape(link)}(?: |$)", re.M)
        assert line.search(block), record["item"]
    # Only the block was added; the audit's own text is all still there.
    outside = body[:start] + body[end + len(CHECKLIST_END) :]
    assert outside.split() == before.split()

    assert SUMMARY_HEADER in run.summary
    for item, title in titles().items():
        assert f"| {item}. {title} |" in run.summary, item
    assert f"Tracking issue #{tracking}: checklist updated" in run.summary

    # The outputs: nothing filed (sync never files), and what changed, line by line.
    assert run.outputs["filed"] == ""
    changed = json.loads(run.outputs["changed"])
    assert f"updated the checklist in #{tracking}" in changed
    assert [c for c in changed if c.startswith("labelled #1108")], changed
    # `issues` names artbot's own issues (found by marker): none yet; #1108-#1110 were filed
    # by hand and are in the catalog.
    assert json.loads(run.outputs["issues"]) == {}
    # The log says what artbot says without --json: what was done, then the plan.
    assert f"updated the checklist in #{tracking}\n" in run.stdout
    assert f"  tracking issue #{tracking}: update the checklist\n" in run.stdout
    assert any((checkout / ".artbot").iterdir()), "sync saved no ETags where the workflow caches"


def test_an_unchanged_sync_is_answered_from_the_etag_cache(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    # The first run writes (checklist, labels on the hand-filed issues), which changes the
    # issues list; the second reads that new list; from then on nothing has changed.
    for _ in range(2):
        run = run_uses("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))
        assert run.returncode == 0, run.stdout + run.stderr
        shutil.rmtree(checkout.parent / "runner-temp")  # a fresh runner each time
    sandbox.requests.clear()

    run = run_uses("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))

    assert run.returncode == 0, run.stdout + run.stderr
    assert writes(sandbox) == []
    statuses = [r.status for r in sandbox.requests if r.method == "GET"]
    assert statuses and all(s == 304 for s in statuses), list(sandbox.requests)
    assert run.outputs["changed"] == "[]"


def test_sync_dry_run_input_writes_nothing(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]

    context = schedule_context(str(tracking), dry_run="true")
    run = run_uses("sync.yml", "sync", checkout, sandbox, context)

    assert run.returncode == 0, run.stdout + run.stderr
    assert writes(sandbox) == []
    assert sandbox.get_issue(OWNER, NAME, tracking)["body"] == before
    assert "Dry run -- nothing has been written." in run.stdout
    assert "(dry run)" in run.summary
    assert (run.outputs["filed"], run.outputs["changed"], run.outputs["issues"]) == ("", "[]", "{}")
    # The plan comes out on a dry run too: what a real run would do.
    plan = json.loads(run.outputs["plan"])
    assert "UpdateChecklist" in [a["action"] for a in plan]
    assert run.outputs["tracking-issue-url"].endswith(f"/{OWNER}/{NAME}/issues/{tracking}")


def test_a_scheduled_sync_verifies_the_newest_release(
    sandbox: GitHubSandbox, checkout: Path, tmp_path: Path
) -> None:
    # ARTBOT_VERIFY unset: the check job ran (no token) and recorded the newest release;
    # `release` is 'latest', and `artbot action` runs `sync --verify latest`, which reads that
    # record.
    # The artbot here records its arguments: verifying a real release is in
    # tests/verify/test_anchors_and_repros.py.
    fake = tmp_path / "fake-venv"
    recorder(fake / "bin", "artbot")
    recorder(fake / "bin", "python")
    record = tmp_path / "calls.jsonl"
    context = schedule_context("7", verify="")
    extra = {"ARTBOT_TEST_CALLS": str(record)}
    run = run_uses("sync.yml", "sync", checkout, sandbox, context, venv=fake, extra_env=extra)

    assert run.returncode == 0, run.stdout + run.stderr
    [artbot] = [c for c in calls(record) if c["exe"] == "artbot"]
    assert artbot["args"] == ["action"]  # the inputs' command line: tests/action/test_report.py
    assert artbot["inputs"]["INPUT_COMMAND"] == "sync"
    assert artbot["inputs"]["INPUT_RELEASE"] == "latest"
    assert artbot["inputs"]["INPUT_TRACKING_ISSUE"] == "7"
    assert artbot["token"]


# -- open.yml's `uses: ./` with command: open --------------------------------------------------


@pytest.mark.parametrize("item", ["7", "all"])
def test_open_dry_run_previews_and_writes_nothing(
    sandbox: GitHubSandbox, tracking: int, checkout: Path, item: str
) -> None:
    run = run_uses("open.yml", "open", checkout, sandbox, open_context(item, "true"))

    assert run.returncode == 0, run.stdout + run.stderr
    assert writes(sandbox) == []
    assert f"--- would file: {titles()[7]}" in run.stdout
    if item == "all":  # every item that has no issue yet
        unfiled = [r for r in records() if not r.get("issue")]
        assert run.stdout.count("--- would file: ") == len(unfiled)
    assert "### artbot open (dry run)" in run.summary
    assert (run.outputs["filed"], run.outputs["changed"]) == ("", "[]")


def test_open_files_the_issue_and_names_it_in_the_outputs_and_the_summary(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    context = {**open_context("4", "false"), "vars.ARTBOT_TRACKING_ISSUE": str(tracking)}
    run = run_uses("open.yml", "open", checkout, sandbox, context)

    assert run.returncode == 0, run.stdout + run.stderr
    assert TOKEN not in run.stdout + run.stderr
    [number] = map(int, run.outputs["filed"].split())
    assert "item=4 -->" in sandbox.get_issue(OWNER, NAME, number)["body"]
    issue = json.loads(run.outputs["issues"])["4"]
    assert issue == {
        "number": number,
        "url": sandbox.get_issue(OWNER, NAME, number)["html_url"],
        "state": "open",
    }
    assert run.outputs["tracking-issue-url"] == sandbox.get_issue(OWNER, NAME, tracking)["html_url"]
    changed = json.loads(run.outputs["changed"])
    assert any(line.startswith(f"item 4: filed #{number} ") for line in changed), changed
    assert f"updated the checklist in #{tracking}" in changed
    assert "### artbot open\n" in run.summary
    assert f"- item 4: filed #{number} " in run.summary
    assert f"#{number}" in sandbox.get_issue(OWNER, NAME, tracking)["body"]

    # Run again: filed once, so nothing is filed the second time.
    shutil.rmtree(checkout.parent / "runner-temp")
    again = run_uses("open.yml", "open", checkout, sandbox, context)
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.outputs["filed"] == ""
    assert f"  item 4: already filed as #{number} (open)" in again.stdout


# -- the action's other inputs ---------------------------------------------------------------


def test_findings_path_points_at_a_catalog_elsewhere_in_the_workspace(
    sandbox: GitHubSandbox, tracking: int, tmp_path: Path
) -> None:
    # Another repository's workspace, with the audit's catalog checked out into audit/.
    workspace = tmp_path / "workspace"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, workspace / "audit" / part)
    inputs = {"command": "sync", "findings-path": "audit", "tracking-issue": str(tracking)}

    run = direct(inputs, workspace, sandbox)

    assert run.returncode == 0, run.stdout + run.stderr
    assert f"updated the checklist in #{tracking}" in json.loads(run.outputs["changed"])
    assert any((workspace / ".artbot").iterdir()), "the ETag cache is not in the workspace"


def test_verify_checks_a_release_and_puts_its_tables_in_the_summary(
    sandbox: GitHubSandbox,
    checkout: Path,
    wheel_cache: Path,  # noqa: F811 - the fixture
) -> None:
    # Item 7 alone: the step's wiring is under test here; every item's check is in
    # tests/verify/test_anchors_and_repros.py and tests/verify/test_controls.py.
    for record in (checkout / "findings").glob("*.yaml"):
        if record.name != "audit.yaml" and not record.name.startswith("07-"):
            record.unlink()  # the follow-ups too: each follows an item removed here
    inputs = {"command": "verify", "release": "0.5.21", "record": "true"}
    run = direct(inputs, checkout, sandbox, extra_env={CACHE_VARIABLE: str(wheel_cache)})

    if "cannot be confined here" in run.stderr:
        # No user namespaces on this machine: in an Actions job verify refuses, runs nothing.
        assert run.returncode == 2 and "GitHub Actions job" in run.stderr
        assert writes(sandbox) == [] and "recorded" not in run.stderr
        return
    # 0.5.21 moved item 7's audited lines (information) and its check ran: exit 0.
    assert run.returncode == 0, run.stdout + run.stderr
    assert "anchors against openpipe-art 0.5.21" in run.stdout
    assert run.summary.startswith(
        "### artbot verify\n\n```text\nanchors against openpipe-art 0.5.21"
    )
    assert "code against openpipe-art 0.5.21\nitem  7: fixed" in run.summary
    assert run.summary.rstrip().endswith("```")
    assert (run.outputs["filed"], run.outputs["changed"]) == ("", "[]")
    assert writes(sandbox) == [] and len(sandbox.requests) == 0
    # record: the check is in findings/status/, with the wheel's digest, for the job that
    # syncs; the confined check said so.
    status = json.loads((checkout / "findings" / "status" / "07.json").read_text())
    [point] = [p for p in status["points"] if p["label"] == "0.5.21"]
    assert point["wheel_sha256"] == INDEX_SHA256["0.5.21"]
    assert "recorded 0.5.21" in run.stderr and "ran confined" in run.stderr


REFUSED = [
    *[({"command": "sync", "tracking-issue": v}, "--tracking-issue") for v in ("1 --dry-run", "0")],
    *[({"command": "sync", "release": v}, "--verify") for v in ("$(touch pwned)", "-1")],
    *[({"command": "open", "items": v}, "item") for v in ("7; touch pwned", "7 --all", "", "ALL")],
    ({"command": "open", "items": "7", "dry-run": "True "}, "dry-run"),
    *[({"command": c}, "command") for c in ("OPEN", "open; touch pwned")],
    ({"command": "verify", "record": "yes; touch pwned"}, "record"),
    ({"command": "verify", "release": "off"}, "verify needs a release"),
    *[({"command": "sync", "max-writes": v}, "--max-writes") for v in ("0", "1\n2", "ten")],
]


@pytest.mark.parametrize(("inputs", "name"), REFUSED, ids=lambda v: repr(v)[:40])
def test_a_bad_input_is_refused_by_name_before_any_request(
    sandbox: GitHubSandbox, checkout: Path, tracking: int, inputs: dict[str, str], name: str
) -> None:
    """Whichever check refuses it (the input's own, or the option of the command it comes
    to), one annotated line names it, exit 2, nothing sent, nothing run by a shell."""
    sandbox.requests.clear()
    run = direct({"tracking-issue": str(tracking), **inputs}, checkout, sandbox)
    refused(run, name)
    assert len(sandbox.requests) == 0
    assert not (checkout / "pwned").exists()
