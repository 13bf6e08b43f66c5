"""requests.yml and the action on an ``issues: edited`` event, against the sandbox: a tick
by someone with write access is carried out once; anyone else's is reverted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from artbot.cli.demo import tick_request
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import read_block
from tests.helpers.action_harness import (
    NAME,
    OWNER,
    REPO,
    direct,
    records,
    seed_as,
    writes,
)
from tests.helpers.testsandbox import TestSandbox
from tests.helpers.workflows import load, step, triggers

pytestmark = pytest.mark.e2e


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, root / part, ignore=shutil.ignore_patterns("status"))
    return root


@pytest.fixture
def tracking(sandbox: TestSandbox) -> int:
    sandbox.create_repo(OWNER, NAME)
    preset = sorted((r["issue"], r["title"]) for r in records() if r.get("issue"))
    for number, title in preset:
        seed_as(sandbox, number, title, "Filed by hand during the audit.")
    body = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    return sandbox.seed_issue(OWNER, NAME, "Numerics audit of ART", body)


def edited(
    tmp: Path, sandbox: GitHubSandbox, number: int, sender: str, before: str
) -> dict[str, str]:
    """The environment of a run started by an edit of #number's body (from ``before``) by
    ``sender``."""
    issue = sandbox.get_issue(OWNER, NAME, number)
    payload = {
        "action": "edited",
        "issue": issue,
        "sender": {"login": sender},
        "changes": {"body": {"from": before}},
    }
    path = tmp / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return {"GITHUB_EVENT_NAME": "issues", "GITHUB_EVENT_PATH": str(path)}


def block(sandbox: GitHubSandbox, number: int) -> str:
    return read_block(sandbox.get_issue(OWNER, NAME, number)["body"]) or ""


@pytest.mark.parametrize(("role", "files"), [("write", True), ("triage", False)])
def test_an_edit_carries_out_a_tick_only_for_a_sender_with_write_access(
    sandbox: GitHubSandbox, tracking: int, checkout: Path, tmp_path: Path, role: str, files: bool
) -> None:
    inputs = {"command": "sync", "tracking-issue": str(tracking)}
    first = direct(inputs, checkout, sandbox)
    assert first.returncode == 0, first.stdout + first.stderr
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]
    tick_request(sandbox, load_catalog(checkout), tracking, "file=5")
    sandbox.set_permission(OWNER, NAME, "someone", role)
    sandbox.requests.clear()
    (tmp_path / "runner-temp" / "artbot-venv").unlink()  # direct() links it again
    event = edited(tmp_path, sandbox, tracking, "someone", before)
    run = direct(inputs, checkout, sandbox, event)
    assert run.returncode == 0, run.stdout + run.stderr
    asked = [r.path for r in sandbox.requests if r.path.endswith("/permission")]
    assert asked == [f"/repos/{OWNER}/{NAME}/collaborators/someone/permission"]
    creates = [w for w in writes(sandbox) if w == f"POST /repos/{OWNER}/{NAME}/issues"]
    assert len(creates) == (1 if files else 0)
    text = block(sandbox, tracking)
    if files:
        assert "artbot:request file=5" not in text  # filed: the request is gone
        assert "filed item 5 as #" in run.summary
        assert json.loads(run.outputs["issues"])["5"]["state"] == "open"
    else:
        assert "- [ ] File the issue for item 5 <!-- artbot:request file=5 -->" in text
        assert "a tick by @someone" in text and "reverted" in run.summary


def test_requests_yml_runs_on_edits_of_the_tracking_issue_only() -> None:
    workflow = load("requests.yml")
    assert triggers(workflow) == {"issues": {"types": ["edited"]}}
    assert set(workflow["jobs"]) == {"check", "requests"}
    check, job = workflow["jobs"]["check"], workflow["jobs"]["requests"]
    tracking = "github.event.issue.number == fromJSON(vars.ARTBOT_TRACKING_ISSUE || '0')"
    for spec in (check, job):
        assert tracking in " ".join(spec["if"].split())
    # Every edit of the tracking issue reaches artbot, which parses the ticks and decides; the
    # check runs only when a re-check is ticked, and holds no token.
    assert "[x] Re-check against the newest release" in check["if"]
    assert "[X] Re-check against the newest release" in check["if"]
    assert "'- [x] '" not in job["if"] and "!cancelled()" in job["if"]
    assert workflow["permissions"] == {}
    assert check["permissions"] == {"contents": "read"}
    assert job["permissions"] == {"issues": "write", "contents": "read"}
    assert job["needs"] == "check"
    # Never beside a sync: the same concurrency group, never cancelled halfway.
    assert workflow["concurrency"] == load("sync.yml")["concurrency"]
    spec = step(workflow, "requests")
    assert spec["uses"] == "./" and spec["with"]["command"] == "sync"
    # A re-check is carried out with the check job's record, when that job succeeded.
    release = spec["with"]["release"]
    assert release == "${{ needs.check.result == 'success' && 'latest' || 'off' }}"
    assert "torch-index-url" not in spec["with"]
    assert spec["with"]["github-token"] == "${{ secrets.GITHUB_TOKEN }}"


def test_items_take_a_list_and_the_outputs_name_every_issue_filed(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    run = direct(
        {"command": "open", "items": "4, 6", "tracking-issue": str(tracking)}, checkout, sandbox
    )
    assert run.returncode == 0, run.stdout + run.stderr
    issues = json.loads(run.outputs["issues"])
    assert sorted(issues) == ["4", "6"]
    assert sorted(map(int, run.outputs["filed"].split())) == sorted(
        i["number"] for i in issues.values()
    )
    for item, issue in issues.items():
        assert issue["url"] == sandbox.get_issue(OWNER, NAME, issue["number"])["html_url"], item
    creates = [a for a in json.loads(run.outputs["plan"]) if a["action"] == "Create"]
    assert [a["item"] for a in creates] == [4, 6]
    assert run.outputs["tracking-issue-url"] == sandbox.get_issue(OWNER, NAME, tracking)["html_url"]


def test_max_writes_stops_the_action_and_its_outputs_say_what_is_left(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    inputs = {"command": "open", "items": "4", "tracking-issue": str(tracking), "max-writes": "1"}
    run = direct(inputs, checkout, sandbox)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(writes(sandbox)) == 1
    assert run.outputs["filed"] == ""
    assert "Create" in [a["action"] for a in json.loads(run.outputs["plan"])]
    assert "--max-writes 1" in run.summary and "what is left" in run.summary
