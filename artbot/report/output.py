"""What artbot prints: token redaction, GitHub Actions annotations, errors, run reports.

Every line that may carry a string from GitHub, the catalog or an exception goes through
:func:`redact`; annotations are escaped as the Actions toolkit escapes workflow commands, and
while a command runs ``sys.stdout``/``sys.stderr`` are :class:`GuardedStream` (redacted, and in
Actions mode no line can start a workflow command) so that no print is missed.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

import click

from ..errors import ArtbotError, CatalogInvalid, Problem
from ..settings import Settings

# A GitHub token is 40 characters or more; nothing shorter is treated as one (redacting a
# one-letter "token" would blank every such letter of the output). artbot refuses to run
# with a token shorter than this (:func:`artbot.github.client.connect`).
MIN_SECRET_LENGTH = 8
# Prefixed to a line that would otherwise start a workflow command in an Actions log.
ESCAPED = "(escaped) "


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Every form of each secret that may be printed: as set, stripped of surrounding
    whitespace (a trailing newline), and each of its lines; longest first, none shorter than
    :data:`MIN_SECRET_LENGTH`."""
    forms = set()
    for value in secrets:
        for form in (value, value.strip(), *value.split()):
            if len(form) >= MIN_SECRET_LENGTH:
                forms.add(form)
    return sorted(forms, key=lambda f: (-len(f), f))


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of every secret replaced by ``***``: the one redaction all
    output goes through (logs, annotations, the step summary, ``--json``, action outputs)."""
    for form in secret_forms(secrets):
        text = text.replace(form, "***")
    return text


def flatten(text: str) -> str:
    """One line of printable text: control characters (newlines included) become spaces."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def neutralize(line: str) -> str:
    """One line of an Actions log (or of a step summary made of it) that cannot be a workflow
    command nor end a fence: the runner reads a command from a line whose text after leading
    whitespace starts with ``::``, and the legacy ``##[`` form anywhere in a line; a line
    starting with a fence (```` ``` ```` or ``~~~``) would close the summary's code block. Such
    a line is printed behind :data:`ESCAPED`, every ``::`` is split by a word joiner and every
    ``##[`` by a space, wherever they are in the line."""
    if line.lstrip().startswith(("::", "```", "~~~")):
        line = ESCAPED + line
    return line.replace("::", ":\u2060:").replace("##[", "# #[")


class GuardedStream(io.TextIOBase):
    """A text stream that redacts every line, and in Actions mode neutralizes it
    (:func:`neutralize`): whatever prints through ``sys.stdout``/``sys.stderr`` (click.echo,
    a library, a traceback) cannot leak the token or start a workflow command. artbot's own
    commands go through :meth:`command`."""

    def __init__(self, raw: TextIO, secrets: Sequence[str], *, in_actions: bool):
        super().__init__()
        self.raw = raw
        self.secrets = tuple(secrets)
        self.in_actions = in_actions
        self._line = ""  # the current line, not yet written

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str:  # type: ignore[override]
        return getattr(self.raw, "errors", None) or "strict"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return bool(getattr(self.raw, "isatty", lambda: False)())

    def _clean(self, line: str) -> str:
        line = redact(line, self.secrets)
        return neutralize(line) if self.in_actions else line

    def write(self, text: str) -> int:  # type: ignore[override]
        if not isinstance(text, str):  # click probes with b"" for a binary stream
            raise TypeError("a text stream")
        *lines, self._line = (self._line + text).split("\n")
        for line in lines:
            self.raw.write(self._clean(line) + "\n")
        return len(text)

    def flush(self) -> None:
        # A line is only ever written whole: a token split across two writes is still found.
        self.raw.flush()

    def close_line(self) -> None:
        if self._line:
            self.raw.write(self._clean(self._line))
            self._line = ""
        self.raw.flush()

    def command(self, line: str) -> None:
        """A workflow command artbot means to give: redacted, escaped by its maker, one line."""
        self.close_line()
        line = neutralize_newlines(redact(line, self.secrets)).replace("##[", "# #[")
        self.raw.write(line + "\n")
        self.raw.flush()


@contextlib.contextmanager
def guarded(settings: Settings) -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` as :class:`GuardedStream` while the context is open."""
    saved = sys.stdout, sys.stderr
    out = GuardedStream(sys.stdout, settings.secrets, in_actions=settings.in_actions)
    err = GuardedStream(sys.stderr, settings.secrets, in_actions=settings.in_actions)
    sys.stdout, sys.stderr = out, err  # type: ignore[assignment]
    try:
        yield
    finally:
        out.close_line()
        err.close_line()
        sys.stdout, sys.stderr = saved


def also_redact(secrets: Sequence[str]) -> None:
    """Redact ``secrets`` too from whatever the guarded streams print from now on (a token
    found after the streams were guarded: the gh CLI's)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, GuardedStream):
            stream.secrets = tuple(dict.fromkeys((*stream.secrets, *secrets)))


def command(line: str) -> None:
    """Print a workflow command artbot gives (an annotation), past the guard's escaping."""
    stream = sys.stdout
    if isinstance(stream, GuardedStream):
        stream.command(line)
    else:
        click.echo(neutralize_newlines(line))


def neutralize_newlines(line: str) -> str:
    return line.replace("\r", "%0D").replace("\n", "%0A")


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
                command(redact(problem_annotation(problem), secrets))
        click.echo(f"{len(exc.problems)} problem(s); nothing was filed.", err=True)
        return exc.exit_code
    if isinstance(exc, ArtbotError):
        message = redact(str(exc), secrets)
        click.echo(f"error: {message}", err=True)
        if settings.in_actions:
            command(annotation("error", message))
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
    Actions), every line redacted. A run that writes has logged its plan and results already
    (:class:`artbot.report.results.Journal`)."""

    def say(text: str, err: bool = False) -> None:
        click.echo(redact(text, settings.secrets), err=err)

    if as_json:
        say(json.dumps(outcome_json(outcome), indent=2, ensure_ascii=False))
        return
    stopped = getattr(outcome, "stopped", None)
    if dry_run or stopped:  # a stopped run's plan is what is left of the one it logged
        say("left for the next run:" if stopped and not dry_run else "plan:")
        for line in outcome.plan.text().splitlines():
            say(f"  {line}")
    if dry_run:
        say("Dry run -- nothing has been written.")
    for w in outcome.warnings:
        say(f"warning: {w}", err=True)
        if settings.in_actions:
            command(annotation("warning", redact(w, settings.secrets)))


def save_cache(cache: Any, settings: Settings) -> None:
    """Save the ETag cache after the report is out: a cache that cannot be written costs the
    next run full reads, so it is a warning, never the report's loss."""
    try:
        cache.save()
    except OSError as exc:
        text = f"could not save the cache {cache.path}: {exc.strerror or exc}"
        text = redact(text + "; the next run reads everything again", settings.secrets)
        click.echo(f"warning: {text}", err=True)
        if settings.in_actions:
            command(annotation("warning", text))
