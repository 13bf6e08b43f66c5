"""What artbot prints: token redaction, GitHub Actions annotations, errors, run reports.

Every line that may carry a string from GitHub, the catalog or an exception goes through
:func:`redact`; annotations are escaped as the Actions toolkit escapes workflow commands.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

import click

from .errors import ArtbotError, CatalogInvalid, Problem
from .settings import Settings


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value replaced by ``***``."""
    for value in secrets:
        if value:
            text = text.replace(value, "***")
    return text


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped (the command ends at a newline)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as a message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(kind: str, message: str, **properties: Any) -> str:
    """``::kind prop=value,...::message``, a GitHub Actions workflow command (error, warning)."""
    props = ",".join(
        f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None
    )
    return f"::{kind}{' ' + props if props else ''}::{escape_data(message)}"


def problem_annotation(problem: Problem) -> str:
    """A validation problem as an ``::error file=...,line=...::`` annotation."""
    text = f"{problem.field}: {problem.message}" if problem.field else problem.message
    return annotation("error", text, file=problem.path, line=problem.line or None)


def fail(exc: BaseException, settings: Settings) -> int:
    """Print an error on stderr (tokens redacted) and return its exit code."""
    secrets = settings.secrets
    if settings.debug:
        click.echo(redact("".join(traceback.format_exception(exc)), secrets), err=True)
    if isinstance(exc, CatalogInvalid):
        for problem in exc.problems:
            click.echo(redact(str(problem), secrets), err=True)
            if settings.in_actions:
                click.echo(redact(problem_annotation(problem), secrets))
        click.echo(f"{len(exc.problems)} problem(s); nothing was filed.", err=True)
        return exc.exit_code
    if isinstance(exc, ArtbotError):
        message = redact(str(exc), secrets)
        click.echo(f"error: {message}", err=True)
        if settings.in_actions:
            click.echo(annotation("error", message))
        return exc.exit_code
    click.echo(redact(f"internal error: {type(exc).__name__}: {exc}", secrets), err=True)
    if not settings.debug:
        click.echo("run again with --debug for a traceback", err=True)
    return 1


def outcome_json(outcome: Any) -> dict[str, Any]:
    """An ``open``/``sync`` outcome as the JSON that ``--json`` prints."""
    issues: Mapping[int, Any] = outcome.issues
    return {
        "plan": outcome.plan.as_json(),
        "done": outcome.done,
        "results": [r.as_json() for r in getattr(outcome, "results", ())],
        "warnings": outcome.warnings,
        "issues": {
            str(k): {"number": v.number, "state": v.state, "url": v.html_url}
            for k, v in issues.items()
        },
        "checklist": outcome.checklist,
        "stopped": getattr(outcome, "stopped", None),
        "tracking_issue": (
            {"number": tracking.number, "url": tracking.html_url}
            if (tracking := getattr(outcome, "tracking", None)) is not None
            else None
        ),
    }


def report(outcome: Any, settings: Settings, *, as_json: bool, dry_run: bool) -> None:
    """Print an ``open``/``sync`` outcome: a dry run's plan, then warnings (annotated in
    Actions). A run that writes has logged its plan and each result already, as it went
    (:class:`artbot.results.Journal`), so neither is printed twice.

    Every line is redacted: plan lines and warnings carry text that came back from GitHub.
    """

    def say(text: str, err: bool = False) -> None:
        click.echo(redact(text, settings.secrets), err=err)

    if as_json:
        say(json.dumps(outcome_json(outcome), indent=2, ensure_ascii=False))
        return
    stopped = getattr(outcome, "stopped", None)
    if dry_run or stopped:  # a stopped run's plan is what is left, planned again dry
        say("plan:")
        for line in outcome.plan.text().splitlines():
            say(f"  {line}")
    if dry_run:
        say("Dry run -- nothing has been written.")
    for w in outcome.warnings:
        say(f"warning: {w}", err=True)
        if settings.in_actions:
            say(annotation("warning", redact(w, settings.secrets)))
