"""``artbot --version``: the package's version; with ``--verbose``, what a bug report needs
besides: Python's version, the catalog's audit commit, and PyGithub's and torch's versions.

Library versions come from the installed distributions' metadata, so nothing heavy (PyGithub,
torch) is imported to learn them.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

DISTRIBUTION = "artbot"
# Named in the verbose output when installed: GitHub I/O, and the reproductions behind verify.
LIBRARIES = ("PyGithub", "torch")


def installed(distribution: str) -> str | None:
    """The installed version of ``distribution``, or None when it is not installed."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def package_version() -> str:
    """artbot's version: the installed distribution's, else the source tree's."""
    from .. import __version__

    return installed(DISTRIBUTION) or __version__


def catalog_line(root: Path) -> str:
    """Where the catalog under ``root`` comes from: the audited repository and commit."""
    from ..errors import ArtbotError
    from ..records.catalog import load_catalog

    if not (root / "findings").is_dir():
        return f"catalog: none in {root} (no findings/)"
    try:
        catalog = load_catalog(root)
    except ArtbotError:
        return f"catalog: {root}: not valid (run `artbot validate`)"
    audit = catalog.audit
    count = len(catalog.findings)
    return f"catalog: {root}: {count} findings, audit of {audit.repository} at {audit.commit}"


def version_text(root: Path, *, verbose: bool = False) -> str:
    """``artbot X.Y.Z``; with ``verbose``, one more line each for Python, libraries, catalog."""
    lines = [f"artbot {package_version()}"]
    if verbose:
        lines.append(f"Python {sys.version.split()[0]}")
        for name in LIBRARIES:
            lines.append(f"{name} {installed(name) or 'not installed'}")
        lines.append(catalog_line(root))
    return "\n".join(lines)
