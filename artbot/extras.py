"""What each command needs beyond artbot's own dependencies: pyproject.toml's extras, read
from artbot's installed metadata (the one place they are listed), checked before a command
runs anything, so a missing one is one line naming the extra to install, not a check failing
per item on a missing module.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

from .errors import BadInput

# The extra each command needs (pyproject.toml's [project.optional-dependencies]).
NEEDS = {
    "verify": "repro",  # ART's code runs against torch
    "repro": "repro",
    "test": "patchtest",  # the check, and pytest for the regression test
    "answer-tests": "patchtest",
}
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


class MissingExtra(BadInput):
    """A command's extra is not installed (exit 2: nothing ran)."""


def extra_modules(extra: str) -> tuple[str, ...]:
    """The modules of ``extra``'s distributions, from artbot's metadata (empty when artbot's
    metadata is not installed: nothing can be said then, and nothing is refused)."""
    try:
        requires = importlib.metadata.requires("artbot") or []
    except importlib.metadata.PackageNotFoundError:
        return ()
    modules = []
    for requirement in requires:
        marker = _EXTRA.search(requirement.partition(";")[2])
        name = _NAME.match(requirement)
        if marker and marker[1] == extra and name:
            modules.append(name[1].lower().replace("-", "_"))
    return tuple(dict.fromkeys(modules))


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-installed package is not installed
        return False


def require(command: str, extra: str | None = None) -> None:
    """Refuse ``command`` in one line when a module of its extra is not installed."""
    extra = extra or NEEDS[command]
    missing = [m for m in extra_modules(extra) if not _installed(m)]
    if missing:
        raise MissingExtra(
            f"artbot {command} needs {', '.join(missing)}, not installed: install artbot's "
            f"`{extra}` extra from where you install artbot, pip install 'artbot[{extra}] @ "
            f"SOURCE' (in its checkout: pip install '.[{extra}]'), torch==2.13.0's CPU build "
            "first (README: Install)"
        )
