"""``artbot action``: the composite action (action.yml) in-process (docs/design.md).

:func:`action_args` turns the ``INPUT_*`` variables (:attr:`artbot.settings.Settings.runner`)
into the command line of the command asked for, checking only what no option checks (the
folders stay in the workspace, the flags are true or false, ``off``); click and
:mod:`artbot.inputs` check the rest, as for any run.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from .errors import BadInput
from .inputs import check_repository, inside_workspace
from .records.models import ACTIONS_BOT
from .report.output import outcome_json, redact
from .settings import Settings

Report = Mapping[str, Any]  # what `artbot open|sync --json` prints (outcome_json)
COMMANDS = ("open", "sync", "verify", "test")


def filed(report: Report) -> list[int]:
    """The issues this run filed: those of the plan's creates that exist now."""
    creates = {a["item"] for a in report["plan"] if a["action"] == "Create"}
    issues = report["issues"]
    return sorted(issues[str(i)]["number"] for i in creates if str(i) in issues)


def outputs(report: Report | None, *, dry_run: bool = False) -> dict[str, str]:
    """The action's outputs, as action.yml describes them; ``report`` is None for ``verify``
    and ``test``, and ``dry_run`` marks the report of a dry run (nothing was written)."""
    if report is None:
        return {"filed": "", "changed": "[]"}
    tracking = report.get("tracking_issue") or {}
    issues = {
        item: {"number": i["number"], "url": i["url"], "state": i["state"]}
        for item, i in report["issues"].items()
    }
    return {
        "filed": "" if dry_run else " ".join(map(str, filed(report))),
        "changed": "[]" if dry_run else json.dumps(report["done"], ensure_ascii=False),
        "issues": json.dumps(issues),
        "tracking-issue-url": str(tracking.get("url") or ""),
        "plan": json.dumps(report["plan"], ensure_ascii=False),
    }


def output_file_text(values: Mapping[str, str]) -> str:
    """``values`` in $GITHUB_OUTPUT's multi-line form, with a delimiter no value contains."""
    text = ""
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        assert delimiter not in value
        text += f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    return text


def open_summary(report: Report | None) -> str:
    """The step summary of ``open``: what was filed and changed, and the warnings."""
    if report is None:
        return (
            "### artbot open (dry run)\n\n"
            "Nothing was written: the plan and each issue's text are in the step's log.\n"
        )
    done = [f"- {line}" for line in report["done"]] or ["Nothing was filed or changed."]
    warnings = [f"> [!WARNING]\n> {w}" for w in report["warnings"]]
    return "\n\n".join(["### artbot open", "\n".join(done), *warnings]) + "\n"


def _flag(runner: Mapping[str, str], name: str) -> bool:
    value = runner.get(f"INPUT_{name.upper().replace('-', '_')}") or "false"
    if value not in ("true", "false"):
        raise BadInput(f"{name}: {value[:40]!r}: give true or false")
    return value == "true"


@dataclass(frozen=True)
class ActionRun:
    """A run of the action, as its inputs ask, a value (:func:`run_action` carries it out):
    the command and its options, where the records are (``copy_from``: the action's own, to
    copy there first; ``status``: a recorded check to copy over theirs), where artbot's scripts
    are published (the issues link them), whether it is a dry run."""

    command: str
    args: tuple[str, ...]
    root: Path
    tool: str | None = None
    dry_run: bool = False
    record: bool = False
    copy_from: Path | None = None
    status: Path | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        """The same run as an ``artbot`` command line."""
        tool = ("--tool-repository", self.tool) if self.tool else ()
        name = "answer-tests" if self.command == "test" else self.command
        return ("--root", str(self.root), *tool, name, *self.args)


def action_args(settings: Settings) -> ActionRun:
    """The run the action's inputs ask for (``settings.runner``): BadInput (exit 2) for an
    input no option of the command checks."""
    env = settings.runner
    command = env.get("INPUT_COMMAND", "")
    if command not in COMMANDS:
        raise BadInput(f"command: {command[:40]!r}: give open, sync, verify or test")
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    action_path = Path(env.get("GITHUB_ACTION_PATH") or ".")
    findings = env.get("INPUT_FINDINGS_PATH", "")
    root = inside_workspace(workspace, findings, "findings-path") if findings else action_path
    tool, copy_from = None, None
    if not findings and action_path.resolve() != workspace.resolve():
        # Another repository's workflow: the action's own records, copied where this job
        # writes (verify's record, the status handed over), never into the action's folder.
        root, copy_from = Path(env.get("RUNNER_TEMP") or ".") / "artbot-records", action_path
        if published := env.get("GITHUB_ACTION_REPOSITORY"):  # the issues link its scripts
            tool = check_repository(published, "GITHUB_ACTION_REPOSITORY")
    status = env.get("INPUT_STATUS", "")
    found = inside_workspace(workspace, status, "status") if status else None
    where = ActionRun(command, (), root, tool, copy_from=copy_from, status=found)
    release = env.get("INPUT_RELEASE", "")
    if command == "verify":
        if release == "off":
            raise BadInput("release: verify needs a release: latest or a version number")
        record = _flag(env, "record")
        check = ("--release", release or "latest", *(("--record",) * record))
        return replace(where, args=check, record=record)
    if command == "test":
        event = env.get("GITHUB_EVENT_PATH", "")
        return replace(where, args=("--event", event) if event else ())
    args: list[str] = []
    if command == "open":
        wanted = re.split(r"[\s,]+", f"{env.get('INPUT_ITEMS', '')} {env.get('INPUT_ITEM', '')}")
        items = [w for w in wanted if w]
        if not items:
            raise BadInput('items: give item numbers (separated by spaces or commas) or "all"')
        args += ["--all"] if items == ["all"] else [f"--item={n}" for n in items]
    elif release and release != "off":  # the check verify recorded: sync runs no ART code
        args += ["--verify", release]
    event = env.get("GITHUB_EVENT_PATH", "")
    if command == "sync" and env.get("GITHUB_EVENT_NAME") == "issues" and Path(event).is_file():
        args += ["--event", event]  # its ticks count only when its sender has write access
    if max_writes := env.get("INPUT_MAX_WRITES", ""):
        args.append(f"--max-writes={max_writes}")
    if tracking := env.get("INPUT_TRACKING_ISSUE", ""):
        args.append(f"--tracking-issue={tracking}")
    if env.get("RUNS_AS_ACTIONS_BOT") == "true":  # its issues are artbot's only when it runs as it
        logins = [*env.get("ARTBOT_AUTHORS", "").split(), ACTIONS_BOT]
        args += [f"--author={login}" for login in logins]
    dry_run = _flag(env, "dry-run")
    args += ["--cache", str(workspace / ".artbot" / "cache.json"), *(["--dry-run"] * dry_run)]
    return replace(where, args=tuple(args), dry_run=dry_run)


def _write(path: str | None, text: str, settings: Settings) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(redact(text, settings.secrets))


def _records(run: ActionRun) -> None:
    """The records where the run reads them: the action's own copied, the status handed over
    copied over theirs (data, validated when read)."""
    if run.copy_from is not None:
        shutil.rmtree(run.root, ignore_errors=True)
        for part in ("findings", "templates", "repros"):
            shutil.copytree(run.copy_from / part, run.root / part)
    if run.status is not None and run.status.is_dir():
        (run.root / "findings" / "status").mkdir(parents=True, exist_ok=True)
        for path in run.status.glob("*.json"):
            shutil.copy(path, run.root / "findings" / "status" / path.name)
    elif run.status is not None:
        from .report.output import command  # artbot's own annotation, past the log's escaping

        command(
            f"::notice::status: no folder {run.status} (the check did not run); the "
            "records' own status is used."
        )


def run_action(settings: Settings) -> int:
    """Run the command the action's inputs ask for; write the step's outputs and summary."""
    env = settings.runner
    run = action_args(settings)
    _records(run)
    report: Report | None = None
    if run.command == "verify":
        # verify writes nothing to GitHub: it runs without any token in its environment.
        argv = [sys.executable, "-m", "artbot", *run.argv]
        proc = subprocess.run(argv, env=dict(settings.child_env), capture_output=True, text=True)
        click.echo(proc.stdout, nl=False)
        click.echo(proc.stderr, nl=False, err=True)
        summary = f"### artbot verify\n\n```text\n{proc.stdout}```\n"
        _write(env.get("GITHUB_STEP_SUMMARY"), summary, settings)
        code = proc.returncode
    else:
        from .cli.context import Context
        from .cli.github import open_, sync
        from .cli.patchtest import answer_tests

        command = {"open": open_, "sync": sync, "test": answer_tests}[run.command]
        obj = Context(replace(settings, root=run.root, tool_repository=run.tool))
        try:
            outcome = command.main(list(run.args), "artbot", standalone_mode=False, obj=obj)
        except click.ClickException as exc:  # an option's own check: one line, annotated
            raise BadInput(exc.format_message()) from None
        if run.command != "test":
            report = outcome_json(outcome)
        code = 0
    values = outputs(report, dry_run=run.dry_run)
    if run.command == "verify" and run.record:
        values["status-path"] = str((run.root / "findings" / "status").resolve())
    values = {k: redact(v, settings.secrets) for k, v in values.items()}
    _write(env.get("GITHUB_OUTPUT"), output_file_text(values), settings)
    if run.command == "open":
        summary = open_summary(None if run.dry_run else report)
        _write(env.get("GITHUB_STEP_SUMMARY"), summary, settings)
    return code


@click.command("action")
@click.pass_obj
def action(obj: Any) -> None:
    """Run as the composite action (action.yml): the command and its options from the
    INPUT_* variables, the step's outputs and summary written from what the command returns."""
    raise SystemExit(run_action(obj.settings))
