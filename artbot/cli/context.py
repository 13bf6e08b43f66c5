"""What every command gets: the run's settings, and the catalog loaded once. Its own module so
that the commands' modules and the group in ``artbot/cli/__init__.py`` import it, not each
other (no import cycle)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..settings import Settings


class Context:
    """What every command gets: the run's :class:`Settings`, built once from flags and env."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.root = settings.root
        self.debug = settings.debug
        self._noted = False

    def catalog(self, *, for_render: bool = False):  # type: ignore[no-untyped-def]
        """The validated catalog; ``for_render``: with artbot's repository and commit (for the
        issues' links; :meth:`note_unlinked` says when the repository is not known)."""
        from ..records.catalog import load_catalog

        if not for_render:
            return load_catalog(self.root)
        from ..records.toolsource import resolve_tool_source

        catalog = load_catalog(self.root)
        s = self.settings
        tool = resolve_tool_source(
            self.root,
            flag=s.tool_repository,
            configured=catalog.audit.tool_repository,
            actions_repository=s.repository if s.in_actions else None,
            workspace=s.workspace,
        )
        return replace(catalog, tool=tool)

    def for_recording(self) -> None:
        """Before a command that records loads the catalog: the records installed with artbot
        are never written in place, so it reads and writes the user's copy of them (made now,
        if there is none; :func:`artbot.records.root.writable_root`), and says so on stderr."""
        from ..records.root import writable_root

        root, note = writable_root(self.root)
        if note is None:
            return
        self.root = root
        self.settings = replace(self.settings, root=root)
        click.echo(note, err=True)

    def use_gh_token(self, api_url: str | None) -> None:
        """Take the gh CLI's token when neither GH_TOKEN nor GITHUB_TOKEN is set (see
        :meth:`Settings.with_gh_token`), redact it from every output from now on, and say so on
        stderr (never the token)."""
        settings = self.settings.with_gh_token(api_url)
        if settings.token_source is None or settings is self.settings:
            return
        self.settings = settings
        from ..report.output import also_redact

        also_redact(settings.secrets)
        click.echo(
            f"token: from {settings.token_source} (neither GH_TOKEN nor GITHUB_TOKEN is set)",
            err=True,
        )

    def note_unlinked(self, catalog: Any) -> None:
        """Say, once, that the issues rendered could not link artbot's scripts (its repository
        is not known), and what was found instead: last, after a command that rendered issues
        did its work (an error stays the one line it is)."""
        note = catalog.tool.note()
        if note and not self._noted:
            self._noted = True
            click.echo(note, err=True)
