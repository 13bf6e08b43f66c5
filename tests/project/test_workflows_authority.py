"""#31: a release's code never runs where a write token is, in the workflows and the action.

Checking a release is a job of its own, with read-only contents and no token; it hands its
record (findings/status/) to the job that writes as an artifact; the job holding
``issues: write`` runs no ART code, ever. (The workflows' other properties, and their lint:
tests/project/test_workflows.py; the confinement on a maintainer's machine:
tests/verify/test_confine.py.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tests.helpers.workflows import (
    ALLOW_USERNS,
    action_steps,
    effective_permissions,
    load,
    load_action,
    step,
    workflow_files,
)


def test_scheduled_sync_verifies_the_newest_release_unless_turned_off() -> None:
    # The check job checks and records the release; the sync reports the record (the action
    # passes `release` to `sync --verify`, run in tests/action/test_composite_action.py).
    workflow = load("sync.yml")
    check = step(workflow, "check")
    assert check["with"]["release"] == "${{ vars.ARTBOT_VERIFY || 'latest' }}"
    assert check["with"]["record"] == "true"
    assert check["with"]["torch-index-url"] == "${{ vars.ARTBOT_TORCH_INDEX_URL }}"
    assert workflow["jobs"]["check"]["if"] == "${{ (vars.ARTBOT_VERIFY || 'latest') != 'off' }}"
    spec = step(workflow, "sync")
    assert spec["with"]["release"] == (
        "${{ needs.check.result == 'success' && (vars.ARTBOT_VERIFY || 'latest') || 'off' }}"
    )
    assert "torch-index-url" not in spec["with"]


def artbot_steps(job: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job.get("steps", []) if s.get("uses") == "./"]


def test_the_job_that_runs_art_code_holds_no_write_token() -> None:
    """#31: checking a release is a job of its own, with no token and read-only contents; it
    hands its record over as an artifact; the job that writes runs no ART code, ever."""
    checked = 0
    for path in workflow_files():
        workflow = load(path.name)
        for name, job in workflow["jobs"].items():
            commands = {s["with"]["command"] for s in artbot_steps(job)}
            permissions = effective_permissions(workflow, name) or {}
            if "verify" in commands:
                checked += 1
                assert commands == {"verify"}, (path.name, name)
                assert permissions == {"contents": "read"}, (path.name, name)
                assert "secrets." not in json.dumps(job), (path.name, name)
                [verify] = artbot_steps(job)
                assert verify["with"]["github-token"] == "", (path.name, name)
                assert verify["with"]["record"] == "true"
                steps = job["steps"]
                allow = [i for i, s in enumerate(steps) if ALLOW_USERNS in s.get("run", "")]
                assert allow and allow[0] < steps.index(verify)
                [upload] = [s for s in steps if "upload-artifact@" in s.get("uses", "")]
                assert upload["with"]["path"] == "findings/status/"
                assert steps.index(upload) > steps.index(verify)
            if "write" in permissions.values():
                assert "verify" not in commands, (path.name, name)
                downloads = []
                for s in artbot_steps(job):
                    assert "torch-index-url" not in s["with"], (path.name, name)
                if job.get("needs") == "check":
                    # It takes only what the check job handed over (by artifact name).
                    handed = {
                        s["with"]["name"]
                        for s in workflow["jobs"]["check"]["steps"]
                        if "upload-artifact@" in s.get("uses", "")
                    }
                    downloads = [
                        s for s in job["steps"] if "download-artifact@" in s.get("uses", "")
                    ]
                    assert {s["with"]["name"] for s in downloads} <= handed, (path.name, name)
                status = [s for s in downloads if s["with"]["name"] == "artbot-status"]
                if status:
                    [down] = status
                    assert down["with"]["path"] == "findings/status/"
                    assert down["if"] == "${{ needs.check.result == 'success' }}"
    assert checked == 2  # sync.yml's and requests.yml's
    # In the action, verify never gets the token, whatever a workflow passes it.
    [run] = [s for s in action_steps() if s.get("id") == "run"]
    assert run["env"]["GH_TOKEN"] == (
        "${{ inputs.command != 'verify' && inputs.github-token || '' }}"
    )
    # and `artbot action` runs it in a process whose environment holds none (test_report.py).
    assert run["run"] == '"$RUNNER_TEMP/artbot-venv/bin/artbot" action'


def _runs_untrusted_code(job: Mapping[str, Any]) -> bool:
    """A job that runs a release's code or a patch's: verify, or `answer-tests --phase check`."""
    commands = {s["with"]["command"] for s in artbot_steps(job)}
    scripts = " ".join(s.get("run", "") for s in job.get("steps", []))
    return "verify" in commands or "--phase check" in scripts


def _caches(job: Mapping[str, Any]) -> set[str]:
    """The caches a job can restore or save: setup-python's pip cache (keyed by its files),
    each actions/cache key's fixed prefix, and the action's virtual environment (its key
    tells verify's, with torch, from the others')."""
    split_key = "extra=repro" in json.dumps(load_action())
    found = set()
    for s in job.get("steps", []):
        uses, given = s.get("uses", ""), s.get("with") or {}
        if uses.startswith("actions/setup-python@") and given.get("cache"):
            found.add(f"pip {given.get('cache-dependency-path', '')}")
        if uses.startswith("actions/cache@"):
            found.add("cache " + str(given.get("key", "")).split("${{")[0])
        if uses == "./":
            kind = given["command"] == "verify" if split_key else "any"
            found.add(f"action venv {kind}")
    return found


def test_no_cache_is_shared_between_untrusted_code_and_a_write_token() -> None:
    """#53: the jobs that run ART's code shared setup-python's pip cache key with the jobs
    that hold write tokens: one could save what the other restores and runs."""
    untrusted: dict[str, set[str]] = {}
    writers: dict[str, set[str]] = {}
    for path in workflow_files():
        workflow = load(path.name)
        for name, job in workflow["jobs"].items():
            where = f"{path.name}:{name}"
            permissions = effective_permissions(workflow, name) or {}
            if _runs_untrusted_code(job):
                untrusted[where] = _caches(job)
                assert not any(k.startswith("pip ") for k in untrusted[where]), where
            if "write" in json.dumps(permissions):
                writers[where] = _caches(job)
    assert untrusted and writers
    for job, caches in untrusted.items():
        for writer, theirs in writers.items():
            assert not caches & theirs, (job, writer, caches & theirs)
