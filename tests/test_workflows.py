"""The GitHub Actions workflows: lint-clean, least privilege, pinned, injection-safe, and working.

The last tests take the `run:` scripts of sync.yml and open.yml as they stand and run them with
bash, in the environment Actions would give them, against the GitHub sandbox: a workflow and
the CLI it calls cannot drift apart unnoticed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from artbot.apply import default_cache_path
from artbot.sandbox import GitHubSandbox

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
BIN = Path(sys.executable).parent
OWNER, NAME = "OpenPipe", "ART"
TOKEN = "dummy-workflow-token"
CHECKLIST_START = "<!-- artbot:checklist:start -->"
CHECKLIST_END = "<!-- artbot:checklist:end -->"
SUMMARY_HEADER = "| Item | Issue | State | What changed |"
# What Actions gives a `shell: bash` step: bash --noprofile --norc -eo pipefail {0}
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]


def workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yml"))


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict), name
    return data


def triggers(workflow: Mapping[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 (PyYAML) reads the bare key `on` as the boolean true.
    value = workflow.get("on", workflow.get(True))
    return {value: None} if isinstance(value, str) else dict(value or {})


def all_steps(workflow: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for job in workflow["jobs"].values():
        yield from job.get("steps", [])


def step(workflow: Mapping[str, Any], step_id: str) -> dict[str, Any]:
    found = [s for s in all_steps(workflow) if s.get("id") == step_id]
    assert len(found) == 1, f"expected one step with id {step_id!r}"
    return found[0]


def effective_permissions(workflow: Mapping[str, Any], job: str) -> Any:
    spec = workflow["jobs"][job]
    return spec["permissions"] if "permissions" in spec else workflow.get("permissions")


def tool(name: str) -> str:
    path = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if path is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' brings it")
    return path


# -- lint ----------------------------------------------------------------------------------


def lint(files: list[Path], cwd: Path) -> list[dict[str, Any]]:
    """jactionlint's findings (actionlint's checks plus security rules), shellcheck included.

    jactionlint is the actionlint fork that PyPI ships as a binary wheel; upstream actionlint
    is on PyPI only as an sdist that downloads its binary at build time.
    """
    proc = subprocess.run(
        [
            tool("jactionlint"),
            "--no-online",
            "--no-color",
            "--format",
            "json",
            f"--shellcheck={tool('shellcheck')}",
            *map(str, files),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout or "[]")
    return findings


def test_workflows_have_no_lint_findings() -> None:
    files = workflow_files()
    assert {f.name for f in files} >= {"sync.yml", "open.yml", "ci.yml"}
    findings = lint(files, REPO)
    report = "\n".join(f"{f['filepath']}:{f['line']}: {f['message']} [{f['id']}]" for f in findings)
    assert findings == [], report


def test_the_linter_catches_injection_and_shell_mistakes(tmp_path: Path) -> None:
    # The clean result above means something only if this linter, so invoked, sees these.
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "name: bad\non:\n  workflow_dispatch:\n    inputs:\n      item:\n        type: string\n"
        "permissions: {}\njobs:\n  a:\n    name: a\n    runs-on: ubuntu-24.04\n"
        "    timeout-minutes: 5\n    steps:\n      - run: echo ${{ inputs.item }} $HOME\n",
        encoding="utf-8",
    )
    rules = {f["id"] for f in lint([bad], tmp_path)}
    assert {"template-injection", "shellcheck"} <= rules


# -- properties ----------------------------------------------------------------------------


def test_every_workflow_sets_permissions_at_the_top() -> None:
    # Without a top-level `permissions`, a job gets the repository's default token scopes.
    for path in workflow_files():
        assert "permissions" in load(path.name), path.name


def test_sync_and_open_have_exactly_issues_write_and_contents_read() -> None:
    for name, job in (("sync.yml", "sync"), ("open.yml", "open")):
        workflow = load(name)
        assert workflow["permissions"] == {}, name
        assert list(workflow["jobs"]) == [job], name
        perms = effective_permissions(workflow, job)
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


def test_ci_runs_make_test_on_python_311_and_312() -> None:
    workflow = load("ci.yml")
    assert {"push", "pull_request"} <= set(triggers(workflow))
    [job] = workflow["jobs"].values()
    assert job["strategy"]["matrix"]["python-version"] == ["3.11", "3.12"]
    runs = [s["run"] for s in job["steps"] if "run" in s]
    assert any(re.match(r"make test\b", r.strip()) for r in runs), runs


def test_ci_runs_the_property_tests_with_random_examples_nightly() -> None:
    workflow = load("ci.yml")
    [entry] = triggers(workflow)["schedule"]
    minute, hour, day, month, weekday = entry["cron"].split()
    assert len(cron_field(minute, 0, 59)) == len(cron_field(hour, 0, 23)) == 1
    assert (day, month, weekday) == ("*", "*", "*")
    [job] = workflow["jobs"].values()
    [step] = [s for s in job["steps"] if re.match(r"make test\b", s.get("run", "").strip())]
    profile = step["env"]["HYPOTHESIS_PROFILE"]
    assert "github.event_name == 'schedule' && 'nightly'" in profile
    assert profile.endswith("|| 'ci' }}")


PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*v\d+\.\d+\.\d+\s*$")


def test_every_action_is_pinned_to_a_commit_with_its_version_named() -> None:
    shas: dict[str, set[str]] = {}
    for path in workflow_files():
        lines = [
            ln
            for ln in path.read_text(encoding="utf-8").splitlines()
            if re.match(r"^\s*-?\s*uses:", ln)
        ]
        uses = [s["uses"] for s in all_steps(load(path.name)) if "uses" in s]
        assert len(lines) == len(uses), path.name
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
    for path in workflow_files():
        for s in all_steps(load(path.name)):
            assert "${{" not in s.get("run", ""), f"{path.name}: {s.get('name') or s['run']}"


def test_setup_python_caches_pip_by_pyproject() -> None:
    for path in workflow_files():
        for s in all_steps(load(path.name)):
            if s.get("uses", "").startswith("actions/setup-python@"):
                assert s["with"]["cache"] == "pip", path.name
                assert s["with"]["cache-dependency-path"] == "pyproject.toml", path.name


def test_sync_installs_runtime_dependencies_only() -> None:
    steps = [s for s in all_steps(load("sync.yml")) if "pip" in s.get("run", "")]
    installs = [(s["run"].strip(), s.get("if")) for s in steps]
    # torch only for --verify (the reproductions), pinned; skipped when ARTBOT_VERIFY is off.
    assert installs == [
        ("python -m pip install -e .", None),
        ("python -m pip install torch==2.13.0", "vars.ARTBOT_VERIFY != 'off'"),
    ]


def test_scheduled_sync_verifies_the_newest_release_unless_turned_off() -> None:
    spec = step(load("sync.yml"), "sync")
    assert spec["env"]["ARTBOT_VERIFY"] == "${{ vars.ARTBOT_VERIFY }}"
    assert 'verify="${ARTBOT_VERIFY:-latest}"' in spec["run"]
    assert 'args+=(--verify "$verify")' in spec["run"]


def test_sync_keeps_artbots_etag_cache_between_runs() -> None:
    steps = list(all_steps(load("sync.yml")))
    [index] = [i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache@")]
    cache = steps[index]["with"]
    assert Path(cache["path"]) == default_cache_path(Path(".")).parent
    assert "${{ github.run_id }}" in cache["key"]
    assert cache["key"].startswith(cache["restore-keys"])
    assert index < steps.index(step(load("sync.yml"), "sync"))


def test_the_token_reaches_only_the_step_that_uses_it() -> None:
    for name, step_id in (("sync.yml", "sync"), ("open.yml", "open")):
        workflow = load(name)
        assert "env" not in workflow and all("env" not in j for j in workflow["jobs"].values())
        holders = [s for s in all_steps(workflow) if "secrets." in json.dumps(s)]
        assert holders == [step(workflow, step_id)], name
        assert holders[0]["env"]["GITHUB_TOKEN"] == "${{ secrets.GITHUB_TOKEN }}"


# -- the scripts, run as Actions would run them ----------------------------------------------


EXPRESSION = re.compile(r"^\$\{\{\s*(.+?)\s*\}\}$")


def step_env(spec: Mapping[str, Any], context: Mapping[str, str]) -> dict[str, str]:
    """The step's `env:`, with each ``${{ x }}`` replaced by ``context[x]``, as Actions would."""
    env = {}
    for key, value in (spec.get("env") or {}).items():
        match = EXPRESSION.match(str(value))
        if match is None:
            assert "${{" not in str(value), f"{key}: only whole-value expressions are modelled"
            env[key] = str(value)
        else:
            assert match[1] in context, f"{key}: the test does not model {match[1]!r}"
            env[key] = context[match[1]]
    return env


def run_step(
    workflow: str,
    step_id: str,
    cwd: Path,
    sandbox: GitHubSandbox,
    context: Mapping[str, str],
) -> subprocess.CompletedProcess[str]:
    """Run one step's script with bash, in the environment a GitHub-hosted runner sets."""
    spec = step(load(workflow), step_id)
    assert load(workflow)["defaults"]["run"]["shell"] == "bash"
    script = cwd.parent / f"{step_id}-step.sh"
    script.write_text(spec["run"], encoding="utf-8")
    env = {
        # A clean environment: a developer's own GH_TOKEN must not win over the step's token.
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(cwd.parent),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": f"{OWNER}/{NAME}",
        "GITHUB_API_URL": sandbox.api_url,
        "GITHUB_STEP_SUMMARY": str(cwd.parent / "step-summary.md"),
        **step_env(spec, context),
    }
    return subprocess.run(
        [*BASH, str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What actions/checkout leaves: the catalog, templates and repros (a copy: sync writes
    its ETag cache into the checkout)."""
    root = tmp_path / "checkout"
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, root / part)
    return root


def seed_as(sandbox: GitHubSandbox, number: int, title: str, body: str) -> int:
    """Seed an issue numbered ``number``: the issues before it are seeded and deleted."""
    while (seeded := sandbox.seed_issue(OWNER, NAME, title, body)) < number:
        sandbox.delete_issue(OWNER, NAME, seeded)
    assert seeded == number
    return seeded


@pytest.fixture
def tracking(sandbox: GitHubSandbox) -> int:
    """ART as the audit left it: the dedicated issues filed by hand (#1108-#1110), then the
    tracking issue, as written, right after them."""
    sandbox.create_repo(OWNER, NAME)
    preset = sorted((r["issue"], r["title"]) for r in records() if r.get("issue"))
    for number, title in preset:
        seed_as(sandbox, number, title, "Filed by hand during the audit.")
    body = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    return sandbox.seed_issue(OWNER, NAME, "Numerics audit of ART", body)


def records() -> list[dict[str, Any]]:
    return [
        yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted((REPO / "findings").glob("[0-9][0-9]-*.yaml"))
    ]


def titles() -> dict[int, str]:
    return {r["item"]: r["title"] for r in records()}


def writes(sandbox: GitHubSandbox) -> list[str]:
    return [f"{r.method} {r.path}" for r in sandbox.requests if r.method not in ("GET", "HEAD")]


def schedule_context(tracking_issue: str, dry_run: str = "") -> dict[str, str]:
    # On a scheduled run `inputs` is empty, so inputs.dry_run is ''.
    return {
        "secrets.GITHUB_TOKEN": TOKEN,
        "vars.ARTBOT_TRACKING_ISSUE": tracking_issue,
        # The reproductions against a release are tested in test_verify.py, not here.
        "vars.ARTBOT_VERIFY": "off",
        "inputs.dry_run": dry_run,
    }


def test_sync_step_fills_the_checklist_and_writes_the_summary(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]

    proc = run_step("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert TOKEN not in proc.stdout + proc.stderr
    body = sandbox.get_issue(OWNER, NAME, tracking)["body"]
    assert CHECKLIST_START in body and CHECKLIST_END in body, "no checklist in the tracking issue"
    start, end = body.index(CHECKLIST_START), body.index(CHECKLIST_END)
    block = body[start:end]
    for record in records():
        link = f"#{record['issue']} " if record.get("issue") else ""
        assert f"{link}{record['item']}. {record['title']}" in block, record["item"]
    # Only the block was added; the audit's own text is all still there.
    outside = body[:start] + body[end + len(CHECKLIST_END) :]
    assert outside.split() == before.split()

    summary = (checkout.parent / "step-summary.md").read_text(encoding="utf-8")
    assert SUMMARY_HEADER in summary
    for item, title in titles().items():
        assert f"| {item}. {title} |" in summary, item
    assert f"Tracking issue #{tracking}: checklist updated" in summary
    [cached] = [
        s["with"]["path"]
        for s in all_steps(load("sync.yml"))
        if s.get("uses", "").startswith("actions/cache@")
    ]
    assert any((checkout / cached).iterdir()), "sync saved no ETags where the workflow caches"


def test_an_unchanged_sync_is_answered_from_the_etag_cache(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    # The first run writes (checklist, labels on the hand-filed issues), which changes the
    # issues list; the second reads that new list; from then on nothing has changed.
    for _ in range(2):
        proc = run_step("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))
        assert proc.returncode == 0, proc.stdout + proc.stderr
    sandbox.requests.clear()

    proc = run_step("sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking)))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert writes(sandbox) == []
    statuses = [r.status for r in sandbox.requests if r.method == "GET"]
    assert statuses and all(s == 304 for s in statuses), list(sandbox.requests)


def test_sync_dry_run_input_writes_nothing(
    sandbox: GitHubSandbox, tracking: int, checkout: Path
) -> None:
    before = sandbox.get_issue(OWNER, NAME, tracking)["body"]

    proc = run_step(
        "sync.yml", "sync", checkout, sandbox, schedule_context(str(tracking), dry_run="true")
    )

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert writes(sandbox) == []
    assert sandbox.get_issue(OWNER, NAME, tracking)["body"] == before
    assert "Dry run -- nothing has been written." in proc.stdout
    summary = (checkout.parent / "step-summary.md").read_text(encoding="utf-8")
    assert "(dry run)" in summary


@pytest.mark.parametrize("value", ["1 --dry-run", "1; touch pwned", "$(touch pwned)", "#1"])
def test_sync_refuses_a_tracking_variable_that_is_not_a_number(
    sandbox: GitHubSandbox, checkout: Path, value: str
) -> None:
    proc = run_step("sync.yml", "sync", checkout, sandbox, schedule_context(value))

    assert proc.returncode == 2
    assert "::error::" in proc.stdout
    assert len(sandbox.requests) == 0
    assert not (checkout / "pwned").exists()


def open_context(item: str, dry_run: str) -> dict[str, str]:
    return {
        "secrets.GITHUB_TOKEN": TOKEN,
        "vars.ARTBOT_TRACKING_ISSUE": "",
        "inputs.item": item,
        "inputs.dry_run": dry_run,
    }


@pytest.mark.parametrize(
    "item", ["7; touch pwned", "$(touch pwned)", "7 --all", "-1", "", "ALL", "7\ntouch pwned"]
)
def test_open_refuses_an_item_that_is_not_a_number_or_all(
    sandbox: GitHubSandbox, checkout: Path, item: str
) -> None:
    proc = run_step("open.yml", "open", checkout, sandbox, open_context(item, "false"))

    assert proc.returncode == 2
    assert "::error::" in proc.stdout
    assert len(sandbox.requests) == 0
    assert not (checkout / "pwned").exists()


@pytest.mark.parametrize("item", ["7", "all"])
def test_open_dry_run_previews_and_writes_nothing(
    sandbox: GitHubSandbox, tracking: int, checkout: Path, item: str
) -> None:
    proc = run_step("open.yml", "open", checkout, sandbox, open_context(item, "true"))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert writes(sandbox) == []
    assert "--- would file: " in proc.stdout
    assert f"--- would file: {titles()[7]}" in proc.stdout
    if item == "all":  # every item that has no issue yet
        unfiled = [r for r in records() if not r.get("issue")]
        assert proc.stdout.count("--- would file: ") == len(unfiled)


@pytest.mark.parametrize("value", ["latest --dry-run", "1; touch pwned", "$(touch pwned)"])
def test_sync_refuses_a_verify_variable_that_is_not_a_version(
    sandbox: GitHubSandbox, checkout: Path, tracking: int, value: str
) -> None:
    context = {**schedule_context(str(tracking)), "vars.ARTBOT_VERIFY": value}
    sandbox.requests.clear()
    proc = run_step("sync.yml", "sync", checkout, sandbox, context)

    assert proc.returncode == 2
    assert "::error::ARTBOT_VERIFY" in proc.stdout
    assert len(sandbox.requests) == 0
    assert not (checkout / "pwned").exists()
