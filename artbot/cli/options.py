"""What the commands share: ``--item``/``--all``, parsed once for every command that takes
them (render, repro, open), and the run's log. Imports only click: ``artbot --help`` loads this
module with the command definitions. The GitHub options are in :mod:`artbot.cli.github`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from .context import Context

F = TypeVar("F", bound=Callable[..., Any])


def item_options(one: str, every: str) -> Callable[[F], F]:
    """``--item N`` (repeatable) and ``--all``, parsed here for every command that takes them:
    the command gets ``items``, the numbers asked for, or None for ``--all``. Neither, or both
    (they conflict), is bad input (one line, exit 2); an unknown item is :func:`findings_of`'s."""

    def decorate(f: F) -> F:
        @functools.wraps(f)
        def command(*args: Any, item: tuple[int, ...], all_: bool, **kwargs: Any) -> Any:
            if bool(item) == all_:
                from ..errors import BadInput  # one line, exit 2, like every input mistake

                both = "--item and --all conflict: give one of them, not both"
                raise BadInput(both if all_ else "give --item N (repeatable) or --all")
            return f(*args, items=None if all_ else item, **kwargs)

        options = click.option("--all", "all_", is_flag=True, help=every)(command)
        return click.option("--item", type=int, multiple=True, help=one)(options)  # type: ignore[return-value]

    return decorate


def findings_of(catalog: Any, items: tuple[int, ...] | None) -> list[Any]:
    """The findings ``items`` names (every one for None), before any other work: an unknown
    item is exit 2 here."""
    return list(catalog.findings) if items is None else [catalog.get(n) for n in items]


def run_log(obj: Context, as_json: bool) -> Callable[[str], None]:
    """Where a run's plan and results go as they happen: stdout, redacted (they carry text
    from GitHub); nowhere with --json, which prints them once at the end."""
    from ..report.output import redact

    secrets = obj.settings.secrets
    return (lambda _: None) if as_json else (lambda line: click.echo(redact(line, secrets)))
