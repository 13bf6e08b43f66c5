"""Help sized to the terminal without importing :mod:`shutil`.

click sizes its help with ``shutil.get_terminal_size()``, and importing shutil (it loads zlib,
bz2 and lzma) is about a third of what ``artbot --help`` adds to importing click. The width is
read here from the same two sources, in the same order, and the help comes out the same.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import click
from click import formatting

FALLBACK_COLUMNS = 80  # shutil's fallback, when COLUMNS is unset and stdout is no terminal


def terminal_columns(env: Mapping[str, str] = os.environ) -> int:
    """``shutil.get_terminal_size().columns``: $COLUMNS when a positive number, else the
    terminal's, else 80."""
    try:
        columns = int(env["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return columns or FALLBACK_COLUMNS


class SizedContext(click.Context):
    """A click context whose help formatter is as wide as click's own, measured as above."""

    def make_formatter(self) -> click.HelpFormatter:
        width = self.terminal_width
        if width is None:
            width = formatting.FORCED_WIDTH  # set by click's CliRunner
        if width is None:
            # click.HelpFormatter's own rule for an unset width.
            width = max(min(terminal_columns(), self.max_content_width or 80) - 2, 50)
        return self.formatter_class(width=width, max_width=self.max_content_width)
