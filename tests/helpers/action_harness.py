"""Runs the composite action (action.yml) as Actions would, for tests/action/.

A workflow's `uses: ./` step becomes the action's inputs (its `with:`, else the action's
defaults, ``${{ }}`` evaluated as Actions does), and the action's `run:` scripts run with bash
in the environment a hosted runner gives a composite action's steps: the inputs through env,
fresh $GITHUB_OUTPUT files, $GITHUB_STEP_SUMMARY, $RUNNER_TEMP, $GITHUB_ACTION_PATH. The
setup steps (the venv's cache key, actions/cache, the install) are the one stand-in: the
virtual environment they would restore or create is linked to one that exists (installing
over the network is not a unit test); tests/action/test_install_step.py
runs the install step itself, with a python3 on PATH that records its calls (``recorder``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from artbot.sandbox import GitHubSandbox
from tests.helpers.testsandbox import TestSandbox
from tests.helpers.workflows import REPO, load, load_action, step

BIN = Path(sys.executable).parent
OWNER, NAME = "OpenPipe", "ART"
TOKEN = "dummy-workflow-token"
# What Actions gives a `shell: bash` step: bash --noprofile --norc -eo pipefail {0}
BASH = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]
EXPRESSION = re.compile(r"^\$\{\{\s*(.+?)\s*\}\}$")


def evaluate(value: Any, context: Mapping[str, str]) -> str:
    """A `with:`/`env:` value as Actions gives it to a step: a whole-value ``${{ }}`` of
    context names and 'literals' with ``!``, ``==``, ``!=``, ``&&``, ``||`` and parentheses,
    as Actions evaluates them (``&&``/``||`` give an operand, comparisons a boolean)."""
    if isinstance(value, bool):
        return str(value).lower()
    text = str(value)
    match = EXPRESSION.match(text)
    if match is None:
        assert "${{" not in text, f"{text!r}: only whole-value expressions are modelled"
        return text
    result = _Expression(match[1], context).value()
    return str(result).lower() if isinstance(result, bool) else result


_TOKEN = re.compile(r"\s*(\(|\)|&&|\|\||==|!=|!|'[^']*'|[A-Za-z_][\w.-]*)")


class _Expression:
    """The few forms of Actions' expression language the workflows use."""

    def __init__(self, text: str, context: Mapping[str, str]):
        self.context = context
        self.tokens: list[str] = []
        at = 0
        while at < len(text.rstrip()):
            found = _TOKEN.match(text, at)
            assert found, f"the test does not model {text[at:]!r}"
            self.tokens.append(found[1])
            at = found.end()

    def value(self) -> str | bool:
        result = self._or()
        assert not self.tokens, f"the test does not model {' '.join(self.tokens)!r}"
        return result

    def _take(self) -> str:
        return self.tokens.pop(0)

    def _or(self) -> str | bool:
        left = self._and()
        while self.tokens[:1] == ["||"]:
            self._take()
            right = self._and()
            left = left if left else right
        return left

    def _and(self) -> str | bool:
        left = self._compare()
        while self.tokens[:1] == ["&&"]:
            self._take()
            right = self._compare()
            left = right if left else left
        return left

    def _compare(self) -> str | bool:
        left = self._unary()
        if self.tokens[:1] in (["=="], ["!="]):
            op = self._take()
            right = self._unary()
            return (str(left) == str(right)) == (op == "==")
        return left

    def _unary(self) -> str | bool:
        token = self._take()
        if token == "!":
            return not self._unary()
        if token == "(":
            inner = self._or()
            assert self._take() == ")"
            return inner
        if token.startswith("'"):
            return token[1:-1]
        assert token in self.context, f"the test does not model {token!r}"
        return self.context[token]


def action_inputs(given: Mapping[str, Any], context: Mapping[str, str]) -> dict[str, str]:
    """Every input of action.yml: from the step's `with:`, else the input's default."""
    spec = load_action()["inputs"]
    assert set(given) <= set(spec), set(given) - set(spec)
    inputs = {}
    for name, declared in spec.items():
        raw = given[name] if name in given else declared.get("default", "")
        inputs[name] = evaluate(raw, context)
        assert inputs[name] or not declared.get("required"), f"required input {name} is empty"
    return inputs


def read_outputs(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT as the runner reads it: ``name=value`` and ``name<<DELIMITER`` blocks,
    lines ending at LF, CR or CRLF (.NET's ReadLine)."""
    outputs: dict[str, str] = {}
    text = path.read_bytes().decode("utf-8")  # line ends as written
    lines = iter(re.split(r"\r\n|\r|\n", text.removesuffix("\n")))
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for body in lines:
                if body == delimiter:
                    break
                value.append(body)
            else:
                pytest.fail(f"{name}: no closing delimiter")
            outputs[name] = "\n".join(value)
        elif line:
            name, value_text = line.split("=", 1)
            outputs[name] = value_text
    return outputs


@dataclass
class ActionRun:
    returncode: int
    stdout: str
    stderr: str
    summary: str
    outputs: dict[str, str] = field(default_factory=dict)  # the action's, per action.yml


def runner_env(
    workspace: Path, sandbox_api: str, action_path: Path | None = None
) -> dict[str, str]:
    """What a hosted runner sets for every step (a clean environment: a developer's own
    GH_TOKEN must not win over the step's token); ``action_path``: where the action was
    downloaded, for a workflow that uses it by name and tag (else `uses: ./`)."""
    temp = workspace.parent / "runner-temp"
    temp.mkdir(exist_ok=True)
    return {
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(workspace.parent),
        "LANG": "C.UTF-8",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": f"{OWNER}/{NAME}",
        "GITHUB_API_URL": sandbox_api,
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(action_path or workspace),  # else `uses: ./`
        "RUNNER_TEMP": str(temp),
        "GITHUB_STEP_SUMMARY": str(workspace.parent / "step-summary.md"),
    }


def run_action_step(
    spec: Mapping[str, Any], inputs: Mapping[str, str], env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    """One `run:` step of the action, with its env and a fresh $GITHUB_OUTPUT."""
    assert spec["shell"] == "bash"
    temp = Path(env["RUNNER_TEMP"])
    script = temp / f"{spec['id']}-step.sh"
    script.write_text(spec["run"], encoding="utf-8")
    context = {f"inputs.{k}": v for k, v in inputs.items()} | {"github.token": TOKEN}
    step_env = {k: evaluate(v, context) for k, v in (spec.get("env") or {}).items()}
    output = temp / f"{spec['id']}-output"
    output.write_text("", encoding="utf-8")
    return subprocess.run(
        [*BASH, str(script)],
        cwd=env["GITHUB_WORKSPACE"],
        env={**env, **step_env, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def run_uses(
    workflow: str,
    step_id: str,
    workspace: Path,
    sandbox: GitHubSandbox,
    context: Mapping[str, str],
    venv: Path = BIN.parent,
    extra_env: Mapping[str, str] | None = None,
) -> ActionRun:
    """Run the action as ``workflow``'s step ``step_id`` calls it; ``venv`` stands in for
    the one the install step creates."""
    spec = step(load(workflow), step_id)
    assert spec["uses"] == "./"
    return run_action(spec, workspace, sandbox, context, venv=venv, extra_env=extra_env)


def run_action(
    spec: Mapping[str, Any],
    workspace: Path,
    sandbox: GitHubSandbox,
    context: Mapping[str, str],
    *,
    action_path: Path | None = None,
    venv: Path = BIN.parent,
    extra_env: Mapping[str, str] | None = None,
) -> ActionRun:
    """Run the action as the workflow step ``spec`` calls it (`uses: ./`, or, with
    ``action_path``, by name from another repository); ``venv`` stands in for the one the
    install step creates."""
    inputs = action_inputs(spec.get("with") or {}, context)
    env = {**runner_env(workspace, sandbox.api_url, action_path), **(extra_env or {})}
    (Path(env["RUNNER_TEMP"]) / "artbot-venv").symlink_to(venv, target_is_directory=True)
    steps = load_action()["runs"]["steps"]
    # The steps up to the install (key, cache, install) are what the linked venv stands for.
    setup = [s["id"] for s in steps].index("install") + 1
    stdout = stderr = ""
    proc = None
    outputs: dict[str, dict[str, str]] = {}
    for s in steps[setup:]:
        assert "run" in s and "if" not in s, s.get("name")
        proc = run_action_step(s, inputs, env)
        stdout, stderr = stdout + proc.stdout, stderr + proc.stderr
        outputs[s["id"]] = read_outputs(Path(env["RUNNER_TEMP"]) / f"{s['id']}-output")
        if proc.returncode != 0:
            break
    assert proc is not None
    steps_context = {
        f"steps.{sid}.outputs.{name}": value
        for sid, values in outputs.items()
        for name, value in values.items()
    }
    declared = load_action()["outputs"]
    action_outputs = {
        name: evaluate(o["value"], {**dict.fromkeys(_names(o["value"]), ""), **steps_context})
        for name, o in declared.items()
    }
    summary_path = Path(env["GITHUB_STEP_SUMMARY"])
    summary = summary_path.read_text(encoding="utf-8") if summary_path.exists() else ""
    return ActionRun(proc.returncode, stdout, stderr, summary, action_outputs)


def _names(value: str) -> list[str]:
    """The context names in a whole-value expression (an unset step output reads as '')."""
    match = EXPRESSION.match(value)
    return [o.strip() for o in match[1].split("||")] if match else []


def direct(
    inputs: Mapping[str, str],
    workspace: Path,
    sandbox: GitHubSandbox,
    extra_env: Mapping[str, str] | None = None,
) -> ActionRun:
    """Run the action with these `with:` inputs, as another repository's workflow would (its
    outputs are the run step's, one for one)."""
    env = {**runner_env(workspace, sandbox.api_url), **(extra_env or {})}
    venv = BIN.parent
    (Path(env["RUNNER_TEMP"]) / "artbot-venv").symlink_to(venv, target_is_directory=True)
    values = action_inputs(inputs, {"github.token": TOKEN})
    [run_step] = [s for s in load_action()["runs"]["steps"] if s["id"] == "run"]
    proc = run_action_step(run_step, values, env)
    outputs = read_outputs(Path(env["RUNNER_TEMP"]) / "run-output")
    summary = Path(env["GITHUB_STEP_SUMMARY"])
    text = summary.read_text(encoding="utf-8") if summary.exists() else ""
    return ActionRun(proc.returncode, proc.stdout, proc.stderr, text, outputs)


def refused(run: ActionRun, name: str) -> None:
    """The action refused an input (exit 2) with one annotated line naming it (the option of
    the command it comes to, or the input itself where no option checks it)."""
    assert run.returncode == 2, run.stdout + run.stderr
    [line] = [ln for ln in run.stdout.splitlines() if ln.startswith("::error::")]
    assert name in line, line


def seed_as(sandbox: TestSandbox, number: int, title: str, body: str) -> int:
    """Seed an issue numbered ``number``: the issues before it are seeded and deleted."""
    while (seeded := sandbox.seed_issue(OWNER, NAME, title, body)) < number:
        sandbox.delete_issue(OWNER, NAME, seeded)
    assert seeded == number
    return seeded


def records() -> list[dict[str, Any]]:
    found = [
        yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in (REPO / "findings").glob("*.yaml")
        if p.name != "audit.yaml"  # the audit's items and artbot's own follow-ups
    ]
    return sorted(found, key=lambda r: r["item"])


def titles() -> dict[int, str]:
    return {r["item"]: r["title"] for r in records()}


def writes(sandbox: GitHubSandbox) -> list[str]:
    return [f"{r.method} {r.path}" for r in sandbox.requests if r.method not in ("GET", "HEAD")]


def schedule_context(tracking_issue: str, dry_run: str = "", verify: str = "off") -> dict[str, str]:
    # On a scheduled run `inputs` is empty, so inputs.dry_run is ''.
    return {
        "secrets.GITHUB_TOKEN": TOKEN,
        "github.token": TOKEN,
        "vars.ARTBOT_TRACKING_ISSUE": tracking_issue,
        # The reproductions against a release are tested in
        # tests/verify/test_anchors_and_repros.py, not here.
        "vars.ARTBOT_VERIFY": verify,
        "vars.ARTBOT_TORCH_INDEX_URL": "",
        "inputs.dry_run": dry_run,
        # sync.yml's check job runs unless ARTBOT_VERIFY is off (here it succeeded).
        "needs.check.result": "skipped" if verify == "off" else "success",
    }


def open_context(item: str, dry_run: str) -> dict[str, str]:
    return {
        "secrets.GITHUB_TOKEN": TOKEN,
        "github.token": TOKEN,
        "vars.ARTBOT_TRACKING_ISSUE": "",
        "inputs.item": item,
        "inputs.dry_run": dry_run,
    }


RECORDER = """#!{python}
# Records how it was called (one JSON line per call); `-m venv DIR` makes DIR/bin/python and
# DIR/bin/artbot, recorders too.
import json, os, sys
from pathlib import Path

exe = Path(sys.argv[0])
with open(os.environ["ARTBOT_TEST_CALLS"], "a", encoding="utf-8") as fh:
    fh.write(json.dumps({{
        "exe": exe.name,
        "args": sys.argv[1:],
        "index": os.environ.get("PIP_EXTRA_INDEX_URL"),
        "token": bool(os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN")),
        "inputs": {{k: v for k, v in os.environ.items() if k.startswith("INPUT_")}},
    }}) + "\\n")
if sys.argv[1:3] == ["-m", "venv"]:
    made = Path(sys.argv[3]) / "bin"
    made.mkdir(parents=True)
    for name in ("python", "artbot"):
        (made / name).write_text(exe.read_text(encoding="utf-8"), encoding="utf-8")
        (made / name).chmod(0o755)
"""


def recorder(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(RECORDER.format(python=sys.executable), encoding="utf-8")
    path.chmod(0o755)
    return path


def calls(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
