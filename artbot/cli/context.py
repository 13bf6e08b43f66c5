"""What every command gets: the run's settings, and the catalog loaded once. Its own module so
that the commands' modules and the group in ``artbot/cli/__init__.py`` import it, not each
other (no import cycle)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..settings import Settings


class Context:
    """What every command gets: the run's :class:`Settings`, built once from flags and env."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.root = settings.root
        self.debug = settings.debug

    def catalog(self, *, for_render: bool = False):  # type: ignore[no-untyped-def]
        """The validated catalog; ``for_render``: with artbot's repository and commit (for the
        issues' links), and a note, once, when the repository is not known."""
        from ..catalog import load_catalog

        if not for_render:
            return load_catalog(self.root)
        from ..toolsource import NO_REPOSITORY_NOTE, resolve_tool_source

        catalog = load_catalog(self.root)
        s = self.settings
        tool = resolve_tool_source(
            self.root,
            flag=s.tool_repository,
            configured=catalog.audit.tool_repository,
            actions_repository=s.repository if s.in_actions else None,
            workspace=s.workspace,
        )
        if not tool.known:
            click.echo(NO_REPOSITORY_NOTE, err=True)
        return replace(catalog, tool=tool)
