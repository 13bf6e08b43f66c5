"""The GitHub Actions workflows and the composite action (action.yml): lint-clean, least
privilege, pinned, injection-safe.

tests/action/test_composite_action.py runs the action's steps, as sync.yml and open.yml call it,
against the GitHub sandbox: a workflow, the action and the CLI it calls cannot drift apart
unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from artbot.action import action_args
from artbot.records.root import default_cache_path
from artbot.settings import Settings
from tests.helpers.workflows import (
    ACTION,
    ALLOW_USERNS,
    PINNED,
    REPO,
    action_steps,
    all_steps,
    effective_permissions,
    every_step,
    lint,
    load,
    load_action,
    step,
    triggers,
    workflow_files,
)

pytestmark = pytest.mark.e2e


def test_workflows_and_the_action_have_no_lint_findings() -> None:
    files = [*workflow_files(), ACTION]
    assert {f.name for f in files} >= {"sync.yml", "open.yml", "ci.yml", "action.yml"}
    findings = lint(files, REPO)
    report = "\n".join(f"{f['filepath']}:{f['line']}: {f['message']} [{f['id']}]" for f in findings)
    assert findings == [], report


BAD_WORKFLOW = """\
name: bad
on:
  workflow_dispatch:
    inputs:
      item:
        type: string
permissions: {}
jobs:
  a:
    name: a
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    steps:
      - run: echo ${{ inputs.item }} $HOME
      - uses: ./
  b:
    name: b
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    steps:
      - uses: actions/checkout@de0fac2e4500dabe0009e67214ff5f5447ce83dd # v6.0.2
      - uses: ./
        with:
          not-an-input: x
"""
BAD_ACTION = """\
name: bad
description: bad
inputs:
  item:
    description: item
runs:
  using: composite
  steps:
    - shell: bash
      run: echo ${{ inputs.item }} $HOME
"""


def test_the_linter_catches_injection_shell_and_input_mistakes(tmp_path: Path) -> None:
    # The clean result above means something only if this linter, so invoked, sees these, in
    # a workflow and in a composite action alike, checks `with:` against action.yml, and
    # that `uses: ./` comes after the checkout that brings it.
    workflow = tmp_path / ".github" / "workflows" / "bad.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(BAD_WORKFLOW, encoding="utf-8")
    action = tmp_path / "action.yml"
    action.write_text(BAD_ACTION, encoding="utf-8")
    # A repository, as here: the linter resolves `./` from the repository's root.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)

    found: dict[str, set[str]] = {}
    for f in lint([workflow, action], tmp_path):
        found.setdefault(Path(f["filepath"]).name, set()).add(f["id"])
    assert {
        "template-injection",
        "shellcheck",
        "unknown-action-input",
        "local-action-checkout",
    } <= found["bad.yml"]
    assert {"template-injection", "shellcheck"} <= found["action.yml"]


# -- properties ----------------------------------------------------------------------------


def test_every_workflow_sets_permissions_at_the_top() -> None:
    # Without a top-level `permissions`, a job gets the repository's default token scopes.
    for path in workflow_files():
        assert "permissions" in load(path.name), path.name


def test_sync_and_open_have_exactly_issues_write_and_contents_read() -> None:
    # sync.yml's other job, the release check, can only read (see below).
    for name, jobs in (("sync.yml", ["check", "sync"]), ("open.yml", ["open"])):
        workflow = load(name)
        assert workflow["permissions"] == {}, name
        assert list(workflow["jobs"]) == jobs, name
        perms = effective_permissions(workflow, jobs[-1])
        assert perms == {"issues": "write", "contents": "read"}, name


def test_ci_can_only_read_contents() -> None:
    workflow = load("ci.yml")
    for job in workflow["jobs"]:
        assert effective_permissions(workflow, job) == {"contents": "read"}


def test_syncs_and_opens_never_overlap_nor_cancel_each_other() -> None:
    for name in ("sync.yml", "open.yml"):
        concurrency = load(name)["concurrency"]
        assert isinstance(concurrency, dict), name
        assert concurrency["group"], name
        assert concurrency["cancel-in-progress"] is False, name


def cron_field(text: str, low: int, high: int) -> set[int]:
    """The values a cron field selects (``*``, ``*/n``, ``a-b``, ``a-b/n``, lists)."""
    values: set[int] = set()
    for part in text.split(","):
        span, _, step_text = part.partition("/")
        stride = int(step_text) if step_text else 1
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first, last = (int(x) for x in span.split("-"))
        else:
            first = last = int(span)
            if step_text:
                last = high
        values.update(range(first, last + 1, stride))
    assert values and min(values) >= low and max(values) <= high, text
    return values


def test_sync_runs_every_six_hours_and_by_hand() -> None:
    on = triggers(load("sync.yml"))
    assert set(on) == {"schedule", "workflow_dispatch"}
    [entry] = on["schedule"]
    minute, hour, day, month, weekday = entry["cron"].split()
    assert len(cron_field(minute, 0, 59)) == 1
    hours = sorted(cron_field(hour, 0, 23))
    gaps = [(b - a) % 24 for a, b in zip(hours, hours[1:] + hours[:1], strict=True)]
    assert gaps == [6, 6, 6, 6], entry["cron"]
    assert (day, month, weekday) == ("*", "*", "*")
    assert on["workflow_dispatch"]["inputs"]["dry_run"]["type"] == "boolean"


def test_open_takes_an_item_and_a_dry_run_flag_by_hand() -> None:
    on = triggers(load("open.yml"))
    assert set(on) == {"workflow_dispatch"}
    inputs = on["workflow_dispatch"]["inputs"]
    assert inputs["item"]["type"] == "string"
    assert inputs["item"]["required"] is True
    assert inputs["dry_run"]["type"] == "boolean"


MAKE_TEST = re.compile(r"^make test-all\b", re.MULTILINE)


def make_test_step() -> dict[str, Any]:
    [job] = load("ci.yml")["jobs"].values()
    [found] = [s for s in job["steps"] if MAKE_TEST.search(s.get("run", ""))]
    return found


def test_ci_runs_every_tier_on_python_311_and_312() -> None:
    workflow = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    [job] = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["python-version"] == ["3.11", "3.12"]
    assert MAKE_TEST.search(make_test_step()["run"])


def test_ci_takes_torch_from_the_cpu_index_and_stays_within_10_minutes() -> None:
    # The index is set in the workflow's environment, from a repository variable; the
    # Makefile (local and offline installs) names no index.
    env = make_test_step()["env"]
    assert env["PIP_EXTRA_INDEX_URL"] == "${{ vars.ARTBOT_TORCH_INDEX_URL }}"
    [job] = load("ci.yml")["jobs"].values()
    assert job["timeout-minutes"] <= 10
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "index" not in makefile.lower()
    assert "torch==2.13.0" in makefile


def test_ci_runs_the_property_tests_with_random_examples_nightly() -> None:
    workflow = load("ci.yml")
    [entry] = triggers(workflow)["schedule"]
    minute, hour, day, month, weekday = entry["cron"].split()
    assert len(cron_field(minute, 0, 59)) == len(cron_field(hour, 0, 23)) == 1
    assert (day, month, weekday) == ("*", "*", "*")
    profile = make_test_step()["env"]["HYPOTHESIS_PROFILE"]
    assert "github.event_name == 'schedule' && 'nightly'" in profile
    assert profile.endswith("|| 'ci' }}")


LOCAL = re.compile(r"^\s*-?\s*uses:\s*\./\s*$")


def test_every_action_is_pinned_to_a_commit_with_its_version_named() -> None:
    # ./ (this repository's own action.yml, at the commit being run) is the one exception.
    shas: dict[str, set[str]] = {}
    for path in [*workflow_files(), ACTION]:
        lines = [
            ln
            for ln in path.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\s*-?\s*uses:", ln) and not LOCAL.match(ln)
        ]
        uses = [s["uses"] for name, s in every_step() if name == path.name and "uses" in s]
        assert len(lines) == len([u for u in uses if u != "./"]), path.name
        for line in lines:
            match = PINNED.match(line)
            assert match, f"{path.name}: not pinned to a full SHA with a # vX.Y.Z comment: {line}"
            shas.setdefault(match[1], set()).add(match[2])
    assert {"actions/checkout", "actions/setup-python", "actions/cache"} <= set(shas)
    # One version of each action across the workflows.
    assert all(len(v) == 1 for v in shas.values()), shas


def test_no_expression_is_pasted_into_a_script() -> None:
    # ${{ }} in `run:` is substituted into the script text before bash reads it: a crafted input
    # becomes code. Every value reaches the scripts through env instead.
    for name, s in every_step():
        assert "${{" not in s.get("run", ""), f"{name}: {s.get('name') or s['run']}"


def test_every_step_of_the_action_runs_bash() -> None:
    # A composite action's `run:` step must name its shell; the scripts are written for bash.
    for s in action_steps():
        if "uses" not in s:  # actions/cache, the one step that is not a script
            assert s.get("shell") == "bash", s.get("name")
    assert load_action()["runs"]["using"] == "composite"


def test_setup_python_caches_pip_by_the_files_that_pin_packages() -> None:
    # ci.yml's torch is pinned in the Makefile; sync and open install from pyproject.toml.
    # The jobs that run a release's or a patch's code cache nothing (#53:
    # test_workflows_authority.py).
    wanted = {"ci.yml": {"pyproject.toml", "Makefile"}}
    for path in workflow_files():
        for s in all_steps(load(path.name)):
            if s.get("uses", "").startswith("actions/setup-python@") and "cache" in s["with"]:
                assert s["with"]["cache"] == "pip", path.name
                keyed = set(s["with"]["cache-dependency-path"].split())
                assert keyed == wanted.get(path.name, {"pyproject.toml"}), path.name


def test_sync_and_open_run_artbots_own_action() -> None:
    # `uses: ./`: the action is tested where it is defined, as other repositories call it.
    for name, step_id, command in (("sync.yml", "sync", "sync"), ("open.yml", "open", "open")):
        spec = step(load(name), step_id)
        assert spec["uses"] == "./", name
        assert spec["with"]["command"] == command, name
        # One script outside the action: the check job's, which lets artbot confine ART's code.
        scripts = [s["run"] for s in all_steps(load(name)) if "run" in s]
        assert all(ALLOW_USERNS in s and len(s.splitlines()) == 3 for s in scripts), name


def test_sync_keeps_artbots_etag_cache_between_runs() -> None:
    steps = list(all_steps(load("sync.yml")))
    [index] = [i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache@")]
    cache = steps[index]["with"]
    # Where the action tells artbot to keep it: the workspace's .artbot/.
    assert Path(cache["path"]) == default_cache_path(Path(".")).parent
    workspace = Path("/runner/work/ART")
    inputs = {"INPUT_COMMAND": "sync", "GITHUB_WORKSPACE": str(workspace)}
    args = action_args(Settings.from_env({**inputs, "GITHUB_ACTION_PATH": str(workspace)})).args
    assert args[args.index("--cache") + 1] == str(workspace / default_cache_path(Path(".")))
    assert "${{ github.run_id }}" in cache["key"]
    assert cache["key"].startswith(cache["restore-keys"])
    assert index < steps.index(step(load("sync.yml"), "sync"))


def test_the_token_reaches_only_the_step_that_uses_it() -> None:
    for name, step_id in (("sync.yml", "sync"), ("open.yml", "open"), ("requests.yml", "requests")):
        workflow = load(name)
        assert "env" not in workflow and all("env" not in j for j in workflow["jobs"].values())
        holders = [s for s in all_steps(workflow) if "secrets." in json.dumps(s)]
        assert holders == [step(workflow, step_id)], name
        assert holders[0]["with"]["github-token"] == "${{ secrets.GITHUB_TOKEN }}"
    # In the action, only the step that runs artbot sees it (not pip's install).
    holders = [s for s in action_steps() if "inputs.github-token" in json.dumps(s)]
    assert [s.get("id") for s in holders] == ["run"]
    token = "${{ inputs.command != 'verify' && inputs.github-token || '' }}"
    assert holders[0]["env"] == {**holders[0]["env"], "GH_TOKEN": token}
    assert load_action()["inputs"]["github-token"]["default"] == "${{ github.token }}"


def uses_of_tool(text: str) -> str:
    [uses] = re.findall(r"uses:\s*(\S+/artbot@\S+)", text)
    return uses


def hosting_repository() -> str | None:
    """Where this checkout is hosted, as artbot finds its own repository for the issues'
    links (artbot.records.toolsource): $GITHUB_REPOSITORY in Actions, else the git remote origin;
    None when neither is known (a copy without a remote)."""
    from artbot.records.toolsource import resolve_tool_source

    workspace = os.environ.get("GITHUB_WORKSPACE")
    return resolve_tool_source(
        REPO,
        actions_repository=os.environ.get("GITHUB_REPOSITORY")
        if os.environ.get("GITHUB_ACTIONS") == "true"
        else None,
        workspace=Path(workspace) if workspace else None,
    ).repository


def readme_example() -> str:
    """The workflow README's "The artbot action" offers to copy into another repository."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### The artbot action") :]
    section = section[: section.index("\n### ", 1)]
    [block] = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    return block


def test_the_readmes_example_for_another_repository_is_lint_clean_and_pinned(
    tmp_path: Path,
) -> None:
    text = readme_example()
    example = tmp_path / ".github" / "workflows" / "artbot-sync.yml"
    example.parent.mkdir(parents=True)
    example.write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    # jactionlint's security rules want every action pinned to a commit; actionlint's own
    # checks have no such rule. The tool's moving tag @v1 is the one finding, and pinned to a
    # commit (as the README shows) the workflow has none.
    found = lint([example], tmp_path)
    assert [f["message"].split(" must be pinned")[0] for f in found] == [
        f'action "{uses_of_tool(text)}"'
    ], found
    pinned = text.replace(uses_of_tool(text), uses_of_tool(text).replace("@v1", "@" + "0" * 40))
    example.write_text(pinned.replace("@" + "0" * 40, "@" + "0" * 40 + " # v1.0.0"), "utf-8")
    assert lint([example], tmp_path) == []

    workflow = yaml.safe_load(text)
    [job] = workflow["jobs"]
    assert workflow["permissions"] == {}
    assert effective_permissions(workflow, job) == {"issues": "write", "contents": "read"}
    [artbot] = [s for s in all_steps(workflow) if "/artbot@" in s.get("uses", "")]
    assert set(artbot["with"]) <= set(load_action()["inputs"])
    assert artbot["with"]["command"] == "sync"
    # The tool's own step takes the moving major tag (the README shows how to pin a commit
    # instead); every other action is pinned to a full commit, as this repository pins them.
    tool, _, version = artbot["uses"].partition("@")
    assert version == "v1", artbot["uses"]
    assert re.fullmatch(r"[A-Za-z0-9][\w.-]*/[\w.-]+", tool) and not tool.startswith("OWNER/")
    assert tool == hosting_repository() or hosting_repository() is None, tool
    for line in text.splitlines():
        if re.match(r"^\s*-?\s*uses:", line) and "/artbot@" not in line:
            assert PINNED.match(line), line

    # The same actions/cache as this repository's sync.yml.
    def caches(wf: Mapping[str, Any]) -> set[str]:
        return {s["uses"] for s in all_steps(wf) if "actions/cache@" in s.get("uses", "")}

    assert caches(workflow) == caches(load("sync.yml")) != set()


def test_artbot_test_splits_reading_checking_and_posting_and_only_the_check_runs_art() -> None:
    """#41: `/artbot test` on issue_comment, split as sync.yml is: the job that runs ART's
    code holds no token and can only read contents; only `post` may write issues."""
    workflow = load("artbot-test.yml")
    assert set(triggers(workflow)) == {"issue_comment"}
    assert triggers(workflow)["issue_comment"]["types"] == ["created", "edited"]
    assert workflow["permissions"] == {}
    assert list(workflow["jobs"]) == ["read", "check", "post"]
    assert effective_permissions(workflow, "read") == {"issues": "read", "contents": "read"}
    assert effective_permissions(workflow, "check") == {"contents": "read"}
    assert effective_permissions(workflow, "post") == {"issues": "write", "contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is False
    holders = [s for s in all_steps(workflow) if "secrets." in json.dumps(s)]
    assert [s.get("id") for s in holders] == ["read", "post"]
    check = workflow["jobs"]["check"]
    assert "secrets." not in json.dumps(check) and check["needs"] == "read"
    assert check["if"] == "${{ needs.read.outputs.tasks != '0' }}"
    jobs = workflow["jobs"].items()
    runs = {job: " ".join(s.get("run", "") for s in j["steps"]) for job, j in jobs}
    assert "--phase check" in runs["check"] and "[patchtest]" in runs["check"]
    assert ALLOW_USERNS in runs["check"]
    # The jobs that hold a token install no torch and run no check.
    for job in ("read", "post"):
        assert "[patchtest]" not in runs[job] and "--phase check" not in runs[job]
