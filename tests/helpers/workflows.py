"""The workflows (.github/workflows/) and the composite action (action.yml), read as YAML, and
jactionlint run over them: shared by the tests of the workflows, the action and its adoption."""

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

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = REPO / ".github" / "workflows"
ACTION = REPO / "action.yml"
BIN = Path(sys.executable).parent


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


def load_action() -> dict[str, Any]:
    data = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def all_steps(workflow: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for job in workflow["jobs"].values():
        yield from job.get("steps", [])


def action_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = load_action()["runs"]["steps"]
    return steps


def every_step() -> Iterator[tuple[str, dict[str, Any]]]:
    """(file name, step) for each step of each workflow and of the composite action."""
    for path in workflow_files():
        for s in all_steps(load(path.name)):
            yield path.name, s
    for s in action_steps():
        yield ACTION.name, s


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


# A `uses:` pinned to a commit, its version named in a comment.
PINNED = re.compile(r"^\s*-?\s*uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})\s+#\s*v\d+\.\d+\.\d+\s*$")

# What lets a hosted runner's user make the namespaces verify confines a release in.
ALLOW_USERNS = "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"
