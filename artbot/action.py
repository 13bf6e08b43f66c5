"""The composite action's (action.yml) account of an ``open`` or ``sync`` run.

action.yml runs ``artbot open|sync --json`` and hands the report here: :func:`log_lines` is
what artbot prints without ``--json`` (the plan, what was done, warnings with their
annotations), :func:`outputs` the step's outputs, :func:`open_summary` the step summary of
``open`` (``sync`` writes its own). A dry run is run without ``--json``, since its preview is
the point, and then once more with ``--json --dry-run`` (reads only) for the ``plan`` output;
it files and changes nothing, and its outputs say so. Pure functions and a small
``main`` (``python -m artbot.action --help``); no GitHub I/O.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, get_args

import click

from .jsonlimits import loads_limited
from .report.output import annotation, command, guarded, redact
from .run import actions as plan_module
from .settings import Settings

Report = Mapping[
    str, Any
]  # what `artbot open|sync --json` prints (artbot.report.output.outcome_json)
ACTIONS = {kind.__name__: kind for kind in get_args(plan_module.Action)}


def filed(report: Report) -> list[int]:
    """The issues this run filed: those of the plan's creates that exist now."""
    creates = {a["item"] for a in report["plan"] if a["action"] == "Create"}
    issues = report["issues"]
    return sorted(issues[str(i)]["number"] for i in creates if str(i) in issues)


def outputs(report: Report | None, *, dry_run: bool = False) -> dict[str, str]:
    """The action's outputs; ``report`` is None for ``verify``, and ``dry_run`` marks the
    report of a dry run (nothing was written).

    ``filed``: issue numbers, space-separated. ``changed``: what was written, a JSON array of
    lines (``item 7: filed #1112 ...``, ``updated the checklist in #1111``). ``issues``: a JSON
    object, item number to ``{"number", "url", "state"}``, for every issue artbot filed (found
    by its marker; issues filed by hand are in the catalog). ``tracking-issue-url``: the
    tracking issue's web address. ``plan``: the plan as JSON, ``[{"action": ..., ...}]`` (on
    a dry run, what a real run would do; after ``max-writes`` stopped a run, what is left).
    """
    if report is None:
        return {"filed": "", "changed": "[]"}
    tracking = report.get("tracking_issue") or {}
    values = {
        "filed": "" if dry_run else " ".join(map(str, filed(report))),
        "changed": "[]" if dry_run else json.dumps(report["done"], ensure_ascii=False),
        "issues": json.dumps(
            {
                item: {"number": i["number"], "url": i["url"], "state": i["state"]}
                for item, i in report["issues"].items()
            }
        ),
        "tracking-issue-url": str(tracking.get("url") or ""),
        "plan": json.dumps(report["plan"], ensure_ascii=False),
    }
    return values


def output_file_text(values: Mapping[str, str]) -> str:
    """``values`` in $GITHUB_OUTPUT's multi-line form, with a delimiter no value contains."""
    text = ""
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        assert delimiter not in value
        text += f"{name}<<{delimiter}\n{value}\n{delimiter}\n"
    return text


def plan_lines(plan: Sequence[Mapping[str, Any]]) -> list[str]:
    """The plan as artbot prints it: each action's own ``describe()``."""
    lines = []
    for data in plan:
        if isinstance(data.get("text"), str):  # the action's describe(), as artbot printed it
            lines.append(data["text"])
            continue
        fields = {k: v for k, v in data.items() if k != "action"}
        try:
            lines.append(ACTIONS[data["action"]](**fields).describe())
        except (KeyError, TypeError):  # an action this artbot does not know: as it came
            lines.append(f"{data['action']}: {json.dumps(fields, ensure_ascii=False)}")
    return lines or ["nothing to do"]


class Command(str):
    """A line that is a workflow command artbot gives (an annotation), not text to escape."""


def log_lines(report: Report, *, in_actions: bool) -> list[tuple[str, bool]]:
    """(line, to stderr) for each line artbot prints without ``--json``: the plan, then each
    result once (what was done or skipped; a failure is among the warnings), then warnings;
    annotations are :class:`Command` lines."""
    lines = [("plan:", False)]
    lines += [(f"  {line}", False) for line in plan_lines(report["plan"])]
    if "results" in report:
        done = [_result_text(r) for r in report["results"] if r["status"] != "failed"]
    else:
        done = list(report["done"])
    lines += [(line, False) for line in done]
    for w in report["warnings"]:
        lines.append((f"warning: {w}", True))
        if in_actions:
            lines.append((Command(annotation("warning", w)), False))
    return lines


def _result_text(result: Mapping[str, Any]) -> str:
    line = str(result["line"])
    return line if result["status"] == "done" else f"{result['status']}: {line}"


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m artbot.action",
        description="Print an `artbot open|sync --json` report as artbot would, and write "
        "the composite action's outputs and (for open) its step summary.",
    )
    parser.add_argument("--command", choices=("open", "sync", "verify"), required=True)
    parser.add_argument("--report", type=Path, help="The --json report (none: a dry run).")
    parser.add_argument("--outputs", type=Path, required=True, help="$GITHUB_OUTPUT")
    parser.add_argument("--summary", type=Path, help="$GITHUB_STEP_SUMMARY (used by open)")
    parser.add_argument(
        "--dry-run", action="store_true", help="The report is a dry run's (already printed)."
    )
    args = parser.parse_args(argv)

    settings = Settings.from_env()
    with guarded(settings):
        return _main(args, settings)


def _main(args: argparse.Namespace, settings: Settings) -> int:
    report = None
    if args.report is not None:
        try:
            report = loads_limited(args.report.read_bytes())
        except (OSError, ValueError) as exc:
            click.echo(f"error: --report {args.report}: not a report ({exc})", err=True)
            return 2
        if not args.dry_run:  # a dry run's report was already printed
            for line, err in log_lines(report, in_actions=settings.in_actions):
                if isinstance(line, Command):
                    command(line)
                else:
                    click.echo(line, err=err)  # redacted and escaped by the guard
    values = {
        k: redact(v, settings.secrets) for k, v in outputs(report, dry_run=args.dry_run).items()
    }
    with args.outputs.open("a", encoding="utf-8") as fh:
        fh.write(output_file_text(values))
    if args.command == "open" and args.summary is not None:
        with args.summary.open("a", encoding="utf-8") as fh:
            fh.write(redact(open_summary(None if args.dry_run else report), settings.secrets))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
