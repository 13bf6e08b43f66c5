"""The options commands share, and what they turn into: ``--item``/``--all`` (parsed once,
for every command that takes them), the GitHub options of ``open`` and ``sync``, and from those
the run's adapter, identity and log. Imports only click: ``artbot --help`` loads this module
with the command definitions, and nothing heavier (PyGithub is imported by :func:`connect`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from .cli import Context

F = TypeVar("F", bound=Callable[..., Any])


def item_options(one: str, every: str) -> Callable[[F], F]:
    """``--item N`` (repeatable) and ``--all``, parsed here for every command that takes them:
    the command gets ``items``, the numbers asked for, or None for ``--all``; neither or both is
    a usage error (exit 2), an unknown item one for :func:`findings_of`."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, item: tuple[int, ...], all_: bool, **kwargs: Any) -> Any:
            if bool(item) == all_:
                raise click.UsageError("give --item N (repeatable) or --all")
            return f(*args, items=None if all_ else item, **kwargs)

        options = click.option("--all", "all_", is_flag=True, help=every)(command)
        return click.option("--item", type=int, multiple=True, help=one)(options)  # type: ignore[return-value]

    return decorate


def findings_of(catalog: Any, items: tuple[int, ...] | None) -> list[Any]:
    """The findings ``items`` names (every one for None), before any other work: an unknown
    item is exit 2 here."""
    return list(catalog.findings) if items is None else [catalog.get(n) for n in items]


def github_options(f: F) -> F:
    """Options shared by the commands that talk to GitHub."""
    options = [
        click.option(
            "--repo",
            "repo_name",
            metavar="OWNER/NAME",
            help="Repository to file in [default: $GITHUB_REPOSITORY, else the audited one].",
        ),
        click.option(
            "--api-url",
            metavar="URL",
            help="GitHub API URL [default: $GITHUB_API_URL, else https://api.github.com].",
        ),
        click.option(
            "--tracking-issue",
            type=click.IntRange(min=1),
            help="Tracking issue number [default: findings/audit.yaml].",
        ),
        click.option(
            "--cache",
            type=click.Path(dir_okay=False, path_type=Path),
            help="ETag cache file [default: ROOT/.artbot/cache.json].",
        ),
        click.option(
            "--author",
            "authors",
            multiple=True,
            metavar="LOGIN",
            envvar="ARTBOT_AUTHORS",
            help="Also count issues written by LOGIN as artbot's (repeatable) "
            "[default: github-actions[bot] and the token's own login; $ARTBOT_AUTHORS].",
        ),
        click.option("--dry-run", is_flag=True, help="Print the plan; write nothing."),
        click.option("--json", "as_json", is_flag=True, help="Print the plan and results as JSON."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def run_log(obj: Context, as_json: bool) -> Callable[[str], None]:
    """Where a run's plan and results go as they happen: stdout, redacted (they carry text
    from GitHub); nowhere with --json, which prints them once at the end."""
    from .output import redact

    secrets = obj.settings.secrets
    return (lambda _: None) if as_json else (lambda line: click.echo(redact(line, secrets)))


def identity(authors: tuple[str, ...]) -> Any:
    """Who artbot writes as: github-actions[bot], the token's login, and ``--author``."""
    from .apply import Identity
    from .ownership import DEFAULT_AUTHORS

    return Identity(authors=(*DEFAULT_AUTHORS, *authors))


def connect(
    obj: Context,
    catalog: Any,
    repo_name: str | None,
    api_url: str | None,
    cache: Path | None,
    dry_run: bool,
) -> Any:
    """The GitHub adapter for this run (imports PyGithub only now)."""
    from .apply import default_cache_path
    from .github import connect as connect_repo

    return connect_repo(
        obj.settings,
        catalog.audit.repository,
        repo_name=repo_name,
        api_url=api_url,
        cache_path=cache or default_cache_path(catalog.root),
        dry_run=dry_run,
    )
