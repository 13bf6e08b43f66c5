"""#40.2: the Action adopted by another repository. docs/examples/workflows/ are ART's own
workflows (open by hand, sync on a schedule with the token-free check job and the artifact
handed over, requests on an edit of the tracking issue), using the action by name and tag:
they pass actionlint, and they run here end to end against the sandbox from a workspace that is
not artbot's, with the action downloaded elsewhere (``$GITHUB_ACTION_PATH``), as Actions does.

A job is its steps in order: the action's steps run as tests/helpers/action_harness.py runs them;
upload-artifact and download-artifact are a copy through a folder; setup-python, the ETag cache
and the AppArmor switch are what the machine already is.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from artbot.cli.demo import tick_request
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox
from artbot.settings import CACHE_VARIABLE
from tests.helpers.action_harness import (
    NAME,
    OWNER,
    REPO,
    TOKEN,
    ActionRun,
    evaluate,
    run_action,
    writes,
)
from tests.helpers.workflows import PINNED, effective_permissions, lint, load_action, triggers
from tests.helpers.workflows import load as load_workflow

pytestmark = pytest.mark.e2e

EXAMPLES = REPO / "docs" / "examples" / "workflows"
PLACEHOLDER = "artbot-audit/artbot@v1"
# What the machine running these tests already is, or stands in for.
MACHINE = ("actions/setup-python@", "actions/cache@", "Allow user namespaces")


def example(name: str) -> dict[str, Any]:
    data = yaml.safe_load((EXAMPLES / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def examples() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yml"))


# -- lint and shape ----------------------------------------------------------------------------


def test_the_examples_are_lint_clean_but_for_the_placeholders_tag(tmp_path: Path) -> None:
    """In a repository of their own (actionlint reads .github/workflows/): the one finding is
    jactionlint's wish for a commit instead of the placeholder's moving tag."""
    assert {p.name for p in examples()} == {
        "artbot-open.yml",
        "artbot-sync.yml",
        "artbot-requests.yml",
        "artbot-test.yml",
    }
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for path in examples():
        shutil.copy2(path, folder / path.name)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    found = lint(sorted(folder.iterdir()), tmp_path)
    assert all(f["message"].startswith(f'action "{PLACEHOLDER}" must be pinned') for f in found)
    uses = sum(p.read_text(encoding="utf-8").count(f"uses: {PLACEHOLDER}") for p in examples())
    assert len(found) == uses == 5


@pytest.mark.parametrize("name", ["artbot-open.yml", "artbot-sync.yml", "artbot-requests.yml"])
def test_each_example_uses_the_action_by_tag_with_its_inputs_and_least_privilege(
    name: str,
) -> None:
    text = (EXAMPLES / name).read_text(encoding="utf-8")
    assert "PLACEHOLDER" in text.split("\nname:")[0], "the placeholder is not said to be one"
    workflow = example(name)
    assert workflow["permissions"] == {}
    for line in text.splitlines():
        if re.match(r"^\s*-?\s*uses:", line) and PLACEHOLDER not in line:
            assert PINNED.match(line), line
    inputs = set(load_action()["inputs"])
    for job, spec in workflow["jobs"].items():
        steps = [s for s in spec["steps"] if s.get("uses") == PLACEHOLDER]
        for s in steps:
            assert set(s["with"]) <= inputs, s["with"]
            verify = s["with"]["command"] == "verify"
            wanted = {} if verify else {"issues": "write"}
            assert effective_permissions(workflow, job) == wanted, job
            assert (s["with"]["github-token"] == "") == verify
        assert not any(s.get("uses", "").startswith("actions/checkout@") for s in spec["steps"])


def test_the_examples_trigger_as_artbots_own_workflows_do() -> None:
    assert set(triggers(example("artbot-open.yml"))) == {"workflow_dispatch"}
    assert set(triggers(example("artbot-sync.yml"))) == {"schedule", "workflow_dispatch"}
    assert triggers(example("artbot-requests.yml")) == {"issues": {"types": ["edited"]}}
    assert triggers(example("artbot-test.yml")) == triggers(load_workflow("artbot-test.yml"))


def test_arts_artbot_test_installs_artbot_and_only_the_check_runs_art_without_a_token() -> None:
    """#54: artbot's own artbot-test.yml installs the repository it runs in (in ART: ART).
    ART's copy installs artbot from where it is published (ARTBOT_SOURCE, the one placeholder),
    checks nothing out, and keeps the three jobs apart: `read` may read issues, `check` (torch,
    pytest, ART's code) has no permissions and no token, `post` alone may write."""
    text = (EXAMPLES / "artbot-test.yml").read_text(encoding="utf-8")
    assert "PLACEHOLDER" in text.split("\nname:")[0]
    workflow = example("artbot-test.yml")
    assert workflow["permissions"] == {}
    assert workflow["env"]["ARTBOT_SOURCE"].startswith("git+https://github.com/")
    assert set(workflow["jobs"]) == {"read", "check", "post"}
    wanted = {"read": {"issues": "read"}, "check": {}, "post": {"issues": "write"}}
    phases = {}
    for job, spec in workflow["jobs"].items():
        assert effective_permissions(workflow, job) == wanted[job], job
        runs = [s.get("run", "") for s in spec["steps"]]
        installs = [r for r in runs if "pip install" in r]
        assert installs and all('@ $ARTBOT_SOURCE"' in r for r in installs), job
        assert not any(re.search(r"pip install[^\n]* \.", r) for r in installs), job
        assert not any(s.get("uses", "").startswith("actions/checkout@") for s in spec["steps"])
        phases[job] = [m for r in runs for m in re.findall(r"answer-tests --phase (\w+)", r)]
        secrets = [s for s in spec["steps"] if "secrets." in json.dumps(s)]
        assert (job == "check") == (secrets == []), job
    assert phases == {"read": ["read"], "check": ["check"], "post": ["post"]}
    check = "\n".join(s.get("run", "") for s in workflow["jobs"]["check"]["steps"])
    assert "torch==2.13.0" in check and "artbot[patchtest] @" in check


def test_the_readmes_adopter_checklist_names_every_variable_and_secret_of_the_examples() -> None:
    """One list of what to set, and the examples agree with it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    checklist = readme.split("### Adopting artbot in ART's repository", 1)[1].split("\n## ", 1)[0]
    used: set[str] = set()
    for path in examples():
        used |= set(re.findall(r"\b(?:vars|secrets)\.(\w+)", path.read_text(encoding="utf-8")))
    assert used, "the examples name no variable or secret"
    for name in sorted(used):
        assert f"`{name}`" in checklist, (
            f"{name}: used by an example, not in the README's checklist"
        )
    for path in examples():
        assert f"`{path.name}`" in checklist, path.name


# -- end to end --------------------------------------------------------------------------------


@pytest.fixture
def action(tmp_path: Path) -> Path:
    """The action as Actions downloads it (outside the workspace), with the audit's records;
    item 7 alone, so that the check job's verify stays short (every item's check is in
    tests/verify/test_anchors_and_repros.py)."""
    path = tmp_path / "_actions" / "artbot-audit" / "artbot" / "v1"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, path / part, ignore=shutil.ignore_patterns("__pycache__"))
    for record in (path / "findings").glob("*.yaml"):
        if record.name != "audit.yaml" and not record.name.startswith("07-"):
            record.unlink()  # the follow-ups too: each follows an item removed here
    for recorded in (path / "findings" / "status").glob("*.json"):
        recorded.unlink()  # no check on record: the sync reports only what the check handed over
    shutil.copy2(REPO / "action.yml", path / "action.yml")
    return path


@pytest.fixture
def tracking(sandbox: GitHubSandbox) -> int:
    sandbox.create_repo(OWNER, NAME)
    body = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    return sandbox.seed_issue(OWNER, NAME, "Numerics audit of ART", body)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


class Job:
    """One job of an example on a fresh runner: its own workspace and $RUNNER_TEMP."""

    def __init__(self, base: Path, name: str, action: Path, sandbox: GitHubSandbox):
        self.workspace = base / name / "workspace"
        self.workspace.mkdir(parents=True)
        self.action, self.sandbox = action, sandbox
        self.ran: dict[str, ActionRun] = {}
        self.skipped: list[str] = []

    def run(
        self,
        spec: Mapping[str, Any],
        context: dict[str, str],
        artifacts: Path,
        extra_env: Mapping[str, str],
    ) -> Iterator[ActionRun]:
        for s in spec["steps"]:
            if "if" in s and evaluate(s["if"], context) != "true":
                continue
            uses = s.get("uses", "")
            if uses == PLACEHOLDER:
                run = run_action(
                    s,
                    self.workspace,
                    self.sandbox,
                    context,
                    action_path=self.action,
                    # The worktree's artbot, not the one the venv was installed from.
                    extra_env={"PYTHONPATH": str(REPO), **extra_env},
                )
                self.ran[s["id"]] = run
                context |= {f"steps.{s['id']}.outputs.{k}": v for k, v in run.outputs.items()}
                yield run
                if run.returncode != 0:
                    return
            elif uses.startswith("actions/upload-artifact@"):
                source = Path(evaluate(s["with"]["path"], context))
                shutil.copytree(self.workspace / source, artifacts / s["with"]["name"])
            elif uses.startswith("actions/download-artifact@"):
                target = self.workspace / evaluate(s["with"]["path"], context)
                shutil.copytree(artifacts / s["with"]["name"], target)
            else:
                assert any(uses.startswith(m) or s.get("name") == m for m in MACHINE), s
                self.skipped.append(uses or s["name"])


def run_job(
    workflow: Mapping[str, Any],
    job: str,
    base: Path,
    action: Path,
    sandbox: GitHubSandbox,
    context: dict[str, str],
    artifacts: Path,
    extra_env: Mapping[str, str] | None = None,
) -> Job:
    runner = Job(base, job, action, sandbox)
    for run in runner.run(workflow["jobs"][job], context, artifacts, extra_env or {}):
        assert run.returncode == 0, run.stdout + run.stderr
        assert TOKEN not in run.stdout + run.stderr
    return runner


def test_art_opens_checks_and_syncs_with_the_action_by_tag(
    sandbox: GitHubSandbox,
    tracking: int,
    action: Path,
    tmp_path: Path,
    wheel_cache: Path,
) -> None:
    untouched = snapshot(action)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    base = {"secrets.GITHUB_TOKEN": TOKEN, "github.token": TOKEN}
    base |= {"vars.ARTBOT_TRACKING_ISSUE": str(tracking), "vars.ARTBOT_TORCH_INDEX_URL": ""}

    # artbot-open.yml, by hand: item 7 filed, and linked from the checklist.
    opened = run_job(
        example("artbot-open.yml"),
        "open",
        tmp_path / "open",
        action,
        sandbox,
        base | {"inputs.item": "7", "inputs.dry_run": "false"},
        artifacts,
    )
    [number] = map(int, opened.ran["open"].outputs["filed"].split())
    assert "item=7 -->" in sandbox.get_issue(OWNER, NAME, number)["body"]
    assert f"#{number}" in sandbox.get_issue(OWNER, NAME, tracking)["body"]

    # artbot-sync.yml on its schedule: the check job (no token) records 0.5.21 and hands the
    # record over; the sync job reads it and reports item 7 fixed there in its issue.
    sync = example("artbot-sync.yml")
    context = base | {"vars.ARTBOT_VERIFY": "0.5.21", "inputs.dry_run": ""}
    assert evaluate(sync["jobs"]["check"]["if"], context) == "true"
    checked = Job(tmp_path / "check", "check", action, sandbox)
    [check] = checked.run(
        sync["jobs"]["check"], dict(context), artifacts, {CACHE_VARIABLE: str(wheel_cache)}
    )
    if "cannot be confined here" in check.stderr:
        pytest.skip("no user namespaces on this machine: verify refuses to run a release here")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "recorded 0.5.21" in check.stderr
    status_path = Path(check.outputs["status-path"])
    assert status_path.is_relative_to(tmp_path / "check")  # the job's $RUNNER_TEMP
    handed = json.loads((artifacts / "artbot-status" / "07.json").read_text(encoding="utf-8"))
    assert "0.5.21" in [p["label"] for p in handed["points"]]
    assert writes(sandbox) == [] or all("comments" not in w for w in writes(sandbox))

    before = len(writes(sandbox))
    context |= {"needs.check.result": "success"}
    synced = run_job(sync, "sync", tmp_path / "sync", action, sandbox, context, artifacts)
    assert len(writes(sandbox)) > before
    body = sandbox.get_issue(OWNER, NAME, number)["body"]
    assert "0.5.21" in body, body
    # Nothing was written where the action was downloaded; the workspace holds the ETag cache
    # and the artifact, and no records.
    assert snapshot(action) == untouched
    assert sorted(p.name for p in synced.workspace.iterdir()) == [".artbot", "artbot-status"]


def test_a_sync_without_the_check_uses_the_records_own_status(
    sandbox: GitHubSandbox, tracking: int, action: Path, tmp_path: Path
) -> None:
    """ARTBOT_VERIFY off: the check job is skipped, the artifact is not downloaded, and the
    status input names a folder that is not there: a notice, and the sync runs."""
    sync = example("artbot-sync.yml")
    context = {"secrets.GITHUB_TOKEN": TOKEN, "github.token": TOKEN, "inputs.dry_run": "true"}
    context |= {"vars.ARTBOT_TRACKING_ISSUE": str(tracking), "vars.ARTBOT_VERIFY": "off"}
    assert evaluate(sync["jobs"]["check"]["if"], context) == "false"
    context |= {"needs.check.result": "skipped"}
    job = run_job(sync, "sync", tmp_path, action, sandbox, context, tmp_path / "none")
    run = job.ran["sync"]
    assert "::notice::status: no folder " in run.stdout
    assert "artbot-status (the check did not run)" in run.stdout
    assert writes(sandbox) == []


def test_a_tick_in_the_tracking_issue_files_the_issue_through_the_requests_example(
    sandbox: GitHubSandbox, tracking: int, action: Path, tmp_path: Path
) -> None:
    sync = example("artbot-sync.yml")
    context = {"secrets.GITHUB_TOKEN": TOKEN, "github.token": TOKEN, "inputs.dry_run": ""}
    context |= {"vars.ARTBOT_TRACKING_ISSUE": str(tracking), "vars.ARTBOT_VERIFY": "off"}
    context |= {"needs.check.result": "skipped"}
    run_job(sync, "sync", tmp_path / "first", action, sandbox, dict(context), tmp_path)
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]
    tick_request(sandbox, load_catalog(action), tracking, "file=7")
    sandbox.set_permission(OWNER, NAME, "someone", "write")
    issue = sandbox.get_issue(OWNER, NAME, tracking)
    event = tmp_path / "event.json"
    payload = {"action": "edited", "issue": issue, "sender": {"login": "someone"}}
    payload["changes"] = {"body": {"from": before}}
    event.write_text(json.dumps(payload), encoding="utf-8")
    env = {"GITHUB_EVENT_NAME": "issues", "GITHUB_EVENT_PATH": str(event)}

    # No re-check ticked: the check job is skipped (its `if` reads the body), the requests
    # job runs with the records' own status.
    requests = example("artbot-requests.yml")
    assert "Re-check against the newest release" in requests["jobs"]["check"]["if"]
    job = run_job(requests, "requests", tmp_path / "edit", action, sandbox, context, tmp_path, env)
    run = job.ran["requests"]
    assert json.loads(run.outputs["issues"])["7"]["state"] == "open"
    assert "filed item 7 as #" in run.summary
