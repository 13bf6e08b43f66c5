"""artbot's command line: parse options, call one library function, print.

Heavy modules (PyGithub, torch) are imported inside the commands that need them, so
``artbot --help``, ``validate``, ``list`` and ``render`` start instantly. artbot's own output,
settings and errors modules, and json, are imported where used too: ``--help`` loads only click
and the command definitions (``make bench`` measures it against importing click alone).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from .context import Context
from .lazy import LAZY
from .options import findings_of, item_options
from .terminal import SizedContext


class ArtbotGroup(click.Group):
    """artbot's commands: those of :data:`.lazy.LAZY` are imported when one is asked for."""

    context_class = SizedContext  # `artbot --help` without shutil's import

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = LAZY.get(cmd_name)
        if lazy is not None and cmd_name not in self.commands:
            import importlib

            command = getattr(importlib.import_module(lazy.module), lazy.attribute)
            command.short_help = lazy.short_help
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, but a command not loaded yet is listed with its help from the table."""
        shown = {n: c for n, c in self.commands.items() if not c.hidden}
        names = sorted({*shown, *LAZY})
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [
            (n, shown[n].get_short_help_str(limit) if n in shown else LAZY[n].short_help)
            for n in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        # Whatever prints while a command runs is redacted and, in Actions, cannot start a
        # workflow command (artbot.report.output.GuardedStream); --help exits before this.
        from ..report.output import guarded
        from ..settings import Settings

        with guarded(Settings.for_errors()):
            try:
                return super().invoke(ctx)
            except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
                raise
            except BrokenPipeError:  # the reader left early (`artbot sync --help | head`)
                import os
                import sys

                # Python flushes stdout at exit again; let that go nowhere, quietly.
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno())  # type: ignore[union-attr]
                ctx.exit(141)  # 128 + SIGPIPE, as a shell reports a process a pipe ended
            except Exception as exc:  # the one place expected failures become exit codes
                from ..report.output import fail

                settings = ctx.obj.settings if ctx.obj else Settings.for_errors()
                ctx.exit(fail(exc, settings))


# invoke_without_command: `artbot --version` needs no command; any other run still needs one.
@click.group(
    cls=ArtbotGroup,
    invoke_without_command=True,
    no_args_is_help=True,
    subcommand_metavar="COMMAND [ARGS]...",
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Repository holding findings/, templates/ and repros/ [default: the current folder "
    "when it has findings/, else the audit's own records, shipped with artbot].",
)
@click.option(
    "--tool-repository",
    metavar="OWNER/NAME",
    help="Where artbot is hosted, for the issues' links to full repro scripts [default: "
    "$GITHUB_REPOSITORY in its Actions checkout, else the git remote origin of --root].",
)
@click.option("--debug", is_flag=True, help="Show tracebacks (tokens redacted).")
@click.option("--version", is_flag=True, help="Print artbot's version and exit.")
@click.option(
    "--verbose",
    is_flag=True,
    help="With --version: also Python's, PyGithub's and torch's versions and the catalog's audit.",
)
@click.pass_context
def cli(
    ctx: click.Context,
    root: Path | None,
    tool_repository: str | None,
    debug: bool,
    version: bool,
    verbose: bool,
) -> None:
    """artbot: file the findings of ART's numerics audit as GitHub issues, and keep them in step.

    Exit codes: 0 ok, 1 remote or run failure, 2 bad input or usage.
    """
    from ..records.root import find_root

    root = find_root(root)
    if version:
        from .version import version_text

        click.echo(version_text(root, verbose=verbose))
        ctx.exit(0)
    if verbose:
        raise click.UsageError("--verbose goes with --version")
    if ctx.invoked_subcommand is None:
        raise click.UsageError("Missing command.")
    from ..settings import Settings

    ctx.obj = Context(Settings.from_env(root=root, debug=debug, tool_repository=tool_repository))


pass_ctx = click.make_pass_decorator(Context)


@cli.command(short_help="Check every finding record and status file.")
@pass_ctx
def validate(obj: Context) -> None:
    """Check every finding record and status file; print each problem as
    path:line: field: message."""
    from ..errors import CatalogInvalid
    from ..inputs import status_problems

    catalog = obj.catalog()
    problems = status_problems(catalog.root, set(catalog.items))
    if problems:
        raise CatalogInvalid(problems)
    click.echo(f"ok: {len(catalog.findings)} findings, audit {catalog.audit.commit}")


@cli.command(name="list", short_help="List the findings: item, title, confidence, issue.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@pass_ctx
def list_(obj: Context, as_json: bool) -> None:
    """List the findings: item, title, confidence, issue."""
    catalog = obj.catalog()
    rows = catalog.rows()
    if as_json:
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        issue = f"#{r['issue']}" if r["issue"] else "-"
        click.echo(f"{r['item']:>3}  {r['confidence']:<11}  {issue:<6}  {r['title']}")


@cli.command(short_help="Print the issue `open` would file (no token needed).")
@item_options("Item to render (repeatable).", "Render every item (with --out).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write NN.md files here instead of printing.",
)
@click.option(
    "--tracking-issue",
    type=click.IntRange(min=1),
    help="Tracking issue number for the back-link.",
)
@pass_ctx
def render(
    obj: Context, items: tuple[int, ...] | None, out: Path | None, tracking_issue: int | None
) -> None:
    """Render the issue title and body that `open` would file (no token needed)."""
    from ..render.prepare import render_all

    if items is None and out is None:
        raise click.UsageError("--all needs --out DIR")
    catalog = obj.catalog(for_render=True)
    findings = findings_of(catalog, items)

    def no_capture(item: int) -> None:
        click.echo(
            f"item {item}: no usable capture on file, so the body has no Result or "
            f"Environment section (run `artbot repro --item {item}`)",
            err=True,
        )

    rendered = render_all(catalog, findings, tracking_issue, no_capture=no_capture)
    for item, issue in rendered.items():
        text = f"# {issue.title}\n\nLabels: {', '.join(issue.labels)}\n\n{issue.body}"
        if out is None:
            click.echo(text, nl=False)
        else:
            out.mkdir(parents=True, exist_ok=True)
            path = out / f"{item:02d}.md"
            path.write_text(text, encoding="utf-8")
            click.echo(f"wrote {path}")
    obj.note_unlinked(catalog)


@cli.command(short_help="Print the JSON Schema of a finding record.")
def schema() -> None:
    """Print the JSON Schema of a finding record (for editors)."""
    import json

    from ..records.models import Finding

    click.echo(json.dumps(Finding.model_json_schema(), indent=2))


@cli.command(short_help="Run reproductions; keep their output for `render`.")
@item_options("Item whose reproduction to run (repeatable).", "Run every item's reproduction.")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds before a script is stopped.",
)
@pass_ctx
def repro(obj: Context, items: tuple[int, ...] | None, timeout_s: float) -> None:
    """Run reproductions and store their output for `render` (findings/results/NN.json)."""
    from ..errors import ReproFailed
    from ..extras import require
    from ..report.output import redact
    from ..repro.run import kept_capture, run_repro, save_result, torch_version

    require("repro")
    obj.for_recording()  # its output is kept: never in the installed package
    catalog = obj.catalog()
    findings = findings_of(catalog, items)
    all_ = items is None
    torch = torch_version()
    failed = 0
    for n, finding in enumerate(findings, 1):
        if all_:
            click.echo(f"[{n}/{len(findings)}] item {finding.item}: {finding.repro} ...", err=True)
        result = run_repro(
            catalog.root,
            finding.item,
            finding.repro,
            timeout_s=timeout_s,
            torch=torch,
            env=obj.settings.child_env,
        )
        if not all_:
            click.echo(result.stdout, nl=False)
        click.echo(f"item {finding.item}: {result.summary()}")
        if result.status == "ok":
            click.echo(
                f"item {finding.item}: kept in {save_result(catalog.root, result)}", err=True
            )
            continue
        # A failed or timed-out run is never evidence: the capture on file stays as it was.
        failed += 1
        click.echo(redact(result.stderr.strip()[-2000:], obj.settings.secrets), err=True)
        click.echo(f"item {finding.item}: {kept_capture(catalog.root, finding.item)}", err=True)
    if failed:
        raise ReproFailed(f"{failed} reproduction(s) did not finish cleanly")


@cli.command(name="export-tests", short_help="Write the regression tests ART can merge.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder to write the tests into [default: tests/unit, ART's layout, when run in an "
    "ART checkout].",
)
@click.option("--force", is_flag=True, help="Replace files of the same name that differ.")
@click.pass_obj
def export_tests_cmd(obj: Context, out: Path | None, force: bool) -> None:
    """Write the regression tests ART can merge (repros/regression/test_*.py) into OUT
    (default: tests/unit/ of the ART checkout it runs in).

    Each imports `art....` as ART's own tests do, asserts what the audit expects, and needs no
    artbot. A claim ART fixed passes; an open one is a strict xfail, so it fails (XPASS) the day
    ART fixes it. A test skips when an optional dependency of ART it needs (torch, fastapi,
    ...) is not installed. A file of the same name that differs is not replaced without --force.
    """
    from ..repro.export import default_out, export_tests

    out = default_out() if out is None else out
    exported = export_tests(obj.root, out, force=force)
    for done in exported:
        click.echo(f"{'wrote' if done.written else 'unchanged'} {done.path}")
    if not any(done.written for done in exported):
        click.echo(f"nothing written: the {len(exported)} tests in {out} are already these")


# --- verify: in artbot/verify/cli.py ------------------------------------------------------


def main() -> None:
    cli(prog_name="artbot")


if __name__ == "__main__":
    main()
