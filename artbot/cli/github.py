"""``artbot open`` and ``artbot sync``: the commands that talk to GitHub, and their options.

Thin, as the rest of the CLI: parse, call :mod:`artbot.run.commands`, print. PyGithub is
imported only when a command connects (:func:`connect`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .options import findings_of, item_options, run_log

if TYPE_CHECKING:
    from .context import Context

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class GitHubArgs:
    """The values of :func:`github_options`, handed to the command as one argument, ``gh``."""

    repo_name: str | None
    api_url: str | None
    tracking_issue: int | None
    cache: Path | None
    authors: tuple[str, ...]
    dry_run: bool
    max_writes: int | None
    as_json: bool


class IssueNumber(click.ParamType):
    """An issue number (1 or more); a bad one is named by where it came from, the option or
    its environment variable (``ARTBOT_TRACKING_ISSUE=abc`` is not ``--tracking-issue``'s)."""

    name = "integer"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if text.isascii() and text.isdigit() and int(text) >= 1:
            return int(text)
        from ..errors import BadInput

        where = f"--{param.name.replace('_', '-')}" if param and param.name else "the value"
        source = ctx.get_parameter_source(param.name) if ctx and param and param.name else None
        envvar = getattr(param, "envvar", None)
        if source is not None and source.name == "ENVIRONMENT" and isinstance(envvar, str):
            where = f"${envvar}"
        raise BadInput(f"{where} {str(value)[:40]!r}: not an issue number (1 or more)")


def github_options(f: F) -> F:
    """Options shared by the commands that talk to GitHub, passed to ``f`` as ``gh``."""

    @functools.wraps(f)
    def command(*args: Any, **kwargs: Any) -> Any:
        gh = GitHubArgs(**{field.name: kwargs.pop(field.name) for field in fields(GitHubArgs)})
        return f(*args, gh=gh, **kwargs)

    options = [
        click.option(
            "-R",
            "--repo",
            "repo_name",
            metavar="OWNER/NAME",
            help="Repository to file in, as OWNER/NAME or its URL [default: $GITHUB_REPOSITORY, "
            "else the audited one].",
        ),
        click.option(
            "--api-url",
            metavar="URL",
            help="GitHub API URL [default: $GITHUB_API_URL, else https://api.github.com].",
        ),
        click.option(
            "--tracking-issue",
            type=IssueNumber(),
            envvar="ARTBOT_TRACKING_ISSUE",
            help="Tracking issue number [default: $ARTBOT_TRACKING_ISSUE, else "
            "findings/audit.yaml, else the one open issue that holds the audit's commit and "
            "checklist; none found: exit 2].",
        ),
        click.option(
            "--cache",
            type=click.Path(dir_okay=False, path_type=Path),
            help="ETag cache file [default: ROOT/.artbot/cache.json for your own records; for "
            "the records installed with artbot, ~/.cache/artbot/etags/cache.json].",
        ),
        click.option(
            "--author",
            "authors",
            multiple=True,
            metavar="LOGIN",
            envvar="ARTBOT_AUTHORS",
            help="The login artbot writes as: issues written by LOGIN count as artbot's "
            "(repeatable) [default: $ARTBOT_AUTHORS, else login in findings/audit.yaml, else "
            "github-actions[bot]].",
        ),
        click.option(
            "--dry-run",
            is_flag=True,
            help="Print the plan (and each new issue's text); write nothing. Needs no token.",
        ),
        click.option(
            "--max-writes",
            type=click.IntRange(min=1),
            help="Stop after N writes and print what is left (the next run does it).",
        ),
        click.option("--json", "as_json", is_flag=True, help="Print the plan and results as JSON."),
    ]
    for option in reversed(options):
        command = option(command)
    return command  # type: ignore[return-value]


def identity(authors: tuple[str, ...]) -> Any:
    """Who artbot writes as, as configured (artbot.run.identity): ``--author``."""
    from ..inputs import check_logins
    from ..run.commands import Identity

    source = click.get_current_context().get_parameter_source("authors")
    from_env = source is not None and source.name == "ENVIRONMENT"
    check_logins(authors, "$ARTBOT_AUTHORS" if from_env else "--author")
    return Identity(authors=tuple(authors))


def connect(
    obj: Context,
    catalog: Any,
    repo_name: str | None,
    api_url: str | None,
    cache: Path | None,
    dry_run: bool,
) -> Any:
    """The GitHub adapter for this run (imports PyGithub only now)."""
    from ..github.client import connect as connect_repo
    from ..records.root import default_cache_path

    obj.use_gh_token(api_url)
    return connect_repo(
        obj.settings,
        catalog.audit.repository,
        repo_name=repo_name,
        api_url=api_url,
        cache_path=cache or default_cache_path(catalog.root),
        dry_run=dry_run,
    )


@click.command(name="open")
@item_options("Item to file (repeatable).", "Every item without an issue.")
@github_options
@click.pass_obj
def open_(obj: Context, items: tuple[int, ...] | None, gh: GitHubArgs) -> Any:
    """File the dedicated issue for an item (once) and link it from the tracking checklist.

    What it writes to GitHub: the issue, with artbot's labels (created if missing); an item
    whose every claim is recorded as fixed is filed and at once closed as completed, a partly
    fixed one is filed open about what remains; the item's line in the tracking issue's
    checklist; and the issue as a sub-issue of the tracking issue. An item that has an issue
    is never filed again.

    --dry-run prints the plan and each new issue's text, and writes nothing. The token comes
    from $GH_TOKEN, else $GITHUB_TOKEN (a dry run needs none).
    """
    from ..report.output import report
    from ..run.commands import open_issues

    catalog = obj.catalog(for_render=True)
    selected = [f.item for f in findings_of(catalog, items)]  # unknown item: exit 2 here
    tracking = catalog.audit.tracking(gh.tracking_issue)
    repo = connect(obj, catalog, gh.repo_name, gh.api_url, gh.cache, gh.dry_run)
    outcome = open_issues(
        catalog,
        repo,
        selected,
        tracking,
        dry_run=gh.dry_run,
        log=run_log(obj, gh.as_json),
        identity=identity(gh.authors),
        max_writes=gh.max_writes,
    )
    if gh.dry_run and not gh.as_json:
        from ..run.plan import Create

        for action in outcome.plan.of(Create):
            issue = outcome.rendered[action.item]
            click.echo(f"\n--- would file: {issue.title}\n\n{issue.body}")
    report(outcome, obj.settings, as_json=gh.as_json, dry_run=gh.dry_run)
    if not gh.as_json:
        # The URL of an issue filed now is in its result line; the others' are shown here.
        now = {r.item for r in outcome.results if r.kind == "Create"}
        for n in selected:
            filed = outcome.issues.get(n)
            if filed and n not in now:
                click.echo(f"item {n}: {filed.html_url}")
    keep_cache(repo.cache, obj.settings)
    obj.note_unlinked(catalog)
    return outcome  # for `artbot action`, which makes the step's outputs of it


def keep_cache(cache: Any, settings: Any) -> None:
    """Save the ETag cache, and say where the first time it is written there."""
    from ..report.output import save_cache

    new = cache.path is not None and not cache.path.exists()
    save_cache(cache, settings)
    if new and cache.path.is_file():
        click.echo(f"kept the ETag cache in {cache.path} (--cache FILE for another)", err=True)


def read_event(path: Path) -> Any:
    """The ``issues: edited`` event artbot acts on; a malformed one is bad input (exit 2)."""
    import json

    from ..errors import BadInput
    from ..tracking.requests import EditEvent

    try:
        return EditEvent.from_payload(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise BadInput(f"--event {path}: {exc}") from None


@click.command()
@github_options
@click.option(
    "--verify",
    "verify_version",
    metavar="VERSION",
    help="Report the check of openpipe-art VERSION (`latest`: the newest checked) that "
    "`artbot verify --release VERSION --record` recorded in findings/status/, and carry out a "
    "ticked re-check with it. sync runs no ART code: record the check first, without the token.",
)
@click.option(
    "--replace-parent",
    is_flag=True,
    help="Make an item's issue a sub-issue of the tracking issue even when it has another "
    "parent (moved from it); without this it is reported and left.",
)
@click.option(
    "--event",
    "event_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The `issues: edited` event's payload ($GITHUB_EVENT_PATH): the requests its sender "
    "ticked are carried out only when the sender has write access, else reverted.",
)
@click.option(
    "--summary",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="GITHUB_STEP_SUMMARY",
    help="Append a markdown summary here [default: $GITHUB_STEP_SUMMARY].",
)
@click.pass_obj
def sync(
    obj: Context,
    gh: GitHubArgs,
    verify_version: str | None,
    replace_parent: bool,
    event_path: Path | None,
    summary: Path | None,
) -> Any:
    """Keep generated issues' bodies and the tracking checklist in step; carry out ticked requests.

    What it writes to GitHub: each generated issue's artbot region (its status table
    included) where it changed, one comment per status change, the tracking issue's
    checklist, and its sub-issues (every item's issue, in item order). Requests ticked in the
    checklist are carried out: "File the issue" files as `open` does (a fixed item closed).
    Never reopens; closes only with close_when_fixed: true in findings/audit.yaml.

    --dry-run prints the plan and writes nothing. The token comes from $GH_TOKEN, else
    $GITHUB_TOKEN (a dry run needs none).
    """
    from ..report.output import report
    from ..run.commands import sync as run_sync

    catalog = obj.catalog(for_render=True)
    tracking = catalog.audit.tracking(gh.tracking_issue)
    repo = connect(obj, catalog, gh.repo_name, gh.api_url, gh.cache, gh.dry_run)
    event = read_event(event_path) if event_path else None

    def check_release(version: str) -> tuple[str, Any]:
        # Read from findings/status/: the process that holds the token runs no release's code.
        from ..verify.record import recorded_check

        return recorded_check(catalog.root, version)

    verified = check_release(verify_version) if verify_version else None
    outcome = run_sync(
        catalog,
        repo,
        tracking,
        dry_run=gh.dry_run,
        verified=verified,
        log=run_log(obj, gh.as_json),
        replace_parent=replace_parent,
        identity=identity(gh.authors),
        verifier=lambda: check_release("latest"),
        event=event,
        max_writes=gh.max_writes,
    )
    report(outcome, obj.settings, as_json=gh.as_json, dry_run=gh.dry_run)
    if summary:
        from ..report.output import redact
        from .summary import step_summary

        text = step_summary(catalog, outcome, dry_run=gh.dry_run)
        with summary.open("a", encoding="utf-8") as fh:
            fh.write(redact(text, obj.settings.secrets))
    keep_cache(repo.cache, obj.settings)
    obj.note_unlinked(catalog)
    return outcome
