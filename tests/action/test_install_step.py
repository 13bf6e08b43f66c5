"""The composite action's install step: artbot in its own virtual environment, torch only for
the reproductions, pinned and from the CPU index, and no token.

The step runs as it stands, with a python3 on PATH that records its calls and those of the
virtual environment's python and artbot it makes (tests/helpers/action_harness.py ``recorder``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.action_harness import (
    REPO,
    TOKEN,
    action_inputs,
    calls,
    recorder,
    run_action_step,
    runner_env,
)
from tests.helpers.workflows import load_action

pytestmark = pytest.mark.e2e


def install(inputs: Mapping[str, str], tmp_path: Path) -> tuple[int, str, list[dict[str, Any]]]:
    """Run the install step with a python3 on PATH that records its calls (and those of the
    virtual environment's python and artbot it makes)."""
    fake_bin = tmp_path / "fake-bin"
    recorder(fake_bin, "python3")
    record = tmp_path / "calls.jsonl"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {
        **runner_env(workspace, "http://127.0.0.1:9"),
        "PATH": f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "ARTBOT_TEST_CALLS": str(record),
    }
    values = action_inputs(inputs, {"github.token": TOKEN})
    [install_step] = [s for s in load_action()["runs"]["steps"] if s["id"] == "install"]
    proc = run_action_step(install_step, values, env)
    return proc.returncode, proc.stdout + proc.stderr, calls(record)


def pip_install(recorded: list[dict[str, Any]]) -> dict[str, Any]:
    [pip] = [c for c in recorded if c["args"][:3] == ["-m", "pip", "install"]]
    return pip


@pytest.mark.parametrize(
    "inputs",
    [
        {"command": "open", "item": "7"},
        {"command": "sync"},
        {"command": "sync", "release": "off"},
        # sync reads the recorded check and runs no ART code: no torch, whatever the release.
        {"command": "sync", "release": "latest", "torch-index-url": "file:///srv/index"},
    ],
)
def test_open_and_sync_install_artbot_without_torch(inputs: dict[str, str], tmp_path: Path) -> None:
    code, log, recorded = install(inputs, tmp_path)

    assert code == 0, log
    workspace = str(tmp_path / "workspace")
    venv = str(tmp_path / "runner-temp" / "artbot-venv")
    assert recorded[1]["args"] == ["-m", "venv", venv]
    pip = pip_install(recorded)
    assert pip["exe"] == "python"  # the virtual environment's, not the job's Python
    assert pip["args"][-1] == workspace  # the action's own folder, no [repro] extra
    assert not any("torch" in " ".join(c["args"]) for c in recorded)
    # Then it says what it installed: artbot --version --verbose.
    assert recorded[-1]["exe"] == "artbot"
    assert recorded[-1]["args"] == ["--root", workspace, "--version", "--verbose"]
    assert not any(c["token"] for c in recorded), "the token reached the install step"


@pytest.mark.parametrize(
    "inputs",
    [
        {"command": "verify"},
        {"command": "verify", "release": "0.5.21"},
    ],
)
def test_the_reproductions_get_pinned_torch_from_the_cpu_index(
    inputs: dict[str, str], tmp_path: Path
) -> None:
    index = "file:///srv/torch-cpu-index"  # stands in for PyTorch's CPU wheel index
    code, log, recorded = install({**inputs, "torch-index-url": index}, tmp_path)

    assert code == 0, log
    pip = pip_install(recorded)
    assert pip["args"][-1] == f"{tmp_path / 'workspace'}[repro]"
    assert pip["index"] == index
    # The [repro] extra pins torch.
    extras = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^repro = \["torch==2\.13\.0"', extras, re.MULTILINE)

    code, log, recorded = install(inputs, tmp_path / "no-index")
    assert code == 0, log
    assert pip_install(recorded)["index"] is None
    assert "::warning::torch-index-url is not set" in log


def test_the_install_step_refuses_an_unknown_command_before_installing(tmp_path: Path) -> None:
    code, log, recorded = install({"command": "deploy"}, tmp_path)

    assert code == 2
    assert "::error::command must be open, sync, verify or test." in log
    assert recorded == []


def test_action_yml_is_what_these_tests_run() -> None:
    # The harness models the setup (the venv's cache key, actions/cache, install) and run;
    # every step but the cache is a bash script with an id, and none is conditional.
    steps = load_action()["runs"]["steps"]
    assert [s["id"] for s in steps] == ["venv-key", "venv-cache", "install", "run"]
    assert all("if" not in s for s in steps)
    assert [s["id"] for s in steps if "run" not in s] == ["venv-cache"]


def test_a_venv_restored_from_the_cache_reinstalls_only_artbot(tmp_path: Path) -> None:
    venv = tmp_path / "runner-temp" / "artbot-venv"
    recorder(venv / "bin", "python")
    recorder(venv / "bin", "artbot")
    (venv / ".artbot-deps").write_text("", encoding="utf-8")
    code, log, recorded = install({"command": "sync"}, tmp_path)
    assert code == 0, log
    assert not [c for c in recorded if c["args"][:2] == ["-m", "venv"]]
    pip = pip_install(recorded)
    assert pip["args"][-3:] == ["--no-deps", "--force-reinstall", str(tmp_path / "workspace")]


def test_the_venv_is_cached_by_pyproject_the_runner_and_python(tmp_path: Path) -> None:
    steps = {s["id"]: s for s in load_action()["runs"]["steps"]}
    cache = steps["venv-cache"]
    assert cache["uses"].startswith("actions/cache@")
    assert cache["with"] == {
        "path": "${{ steps.venv-key.outputs.path }}",
        "key": "${{ steps.venv-key.outputs.key }}",
    }
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'x'\n", encoding="utf-8")
    env = {**runner_env(workspace, "http://127.0.0.1:9"), "RUNNER_OS": "Linux"}
    keys = []
    for inputs in ({"command": "sync"}, {"command": "verify"}, {"command": "sync"}):
        values = action_inputs(inputs, {"github.token": TOKEN})
        proc = run_action_step(steps["venv-key"], values, env)
        assert proc.returncode == 0, proc.stderr
        out = (Path(env["RUNNER_TEMP"]) / "venv-key-output").read_text(encoding="utf-8")
        keys.append(dict(line.split("=", 1) for line in out.splitlines()))
    assert keys[0] == keys[2] != keys[1]  # torch (verify) gets its own environment
    assert keys[0]["path"] == str(Path(env["RUNNER_TEMP"]) / "artbot-venv")
    assert keys[0]["key"].startswith("artbot-venv-Linux-") and "-base-" in keys[0]["key"]
    (workspace / "pyproject.toml").write_text("[project]\nname = 'y'\n", encoding="utf-8")
    values = action_inputs({"command": "sync"}, {"github.token": TOKEN})
    proc = run_action_step(steps["venv-key"], values, env)
    out = (Path(env["RUNNER_TEMP"]) / "venv-key-output").read_text(encoding="utf-8")
    assert dict(line.split("=", 1) for line in out.splitlines())["key"] != keys[0]["key"]
