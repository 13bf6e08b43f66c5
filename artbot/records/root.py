"""Where the audit's records are when ``--root`` is not given: the folder artbot runs in, when
it holds ``findings/``; else artbot's own checkout (a source or editable install); else the
records that ship inside the installed package (``artbot/_audit``, built from this
repository's findings/, templates/ and repros/: pyproject.toml's package data). So an installed
artbot lists, renders and exports the tests from an ART checkout, or any folder.
"""

from __future__ import annotations

from pathlib import Path

PACKAGED = "_audit"  # artbot/_audit in a built package: findings/, templates/, repros/


def _has_records(folder: Path) -> bool:
    return (folder / "findings" / "audit.yaml").is_file()


def packaged_root() -> Path | None:
    """The records shipped with artbot: in its own checkout, or inside the installed package."""
    package = Path(__file__).resolve().parents[1]
    for folder in (package / PACKAGED, package.parent):
        if _has_records(folder):
            return folder
    return None


def is_installed_records(root: Path) -> bool:
    """``root`` is the records inside the installed package (``artbot/_audit``)."""
    package = Path(__file__).resolve().parents[1]
    return root.resolve() == package / PACKAGED


def find_root(given: Path | None, cwd: Path | None = None) -> Path:
    """``given`` when given (``--root``); else the current folder when it holds ``findings/``;
    else the records artbot ships; else the current folder (whose missing findings/ is then
    reported as today)."""
    if given is not None:
        return given
    here = Path(".") if cwd is None else cwd
    if (here / "findings").is_dir():
        return here
    return packaged_root() or here


def default_cache_path(root: Path) -> Path:
    """Where ``open`` and ``sync`` keep their ETag cache without ``--cache``: ``ROOT/.artbot``,
    or, for the records that ship inside an installed artbot (not its to write), the folder
    artbot is run in."""
    folder = Path(".") if is_installed_records(root) else root
    return folder / ".artbot" / "cache.json"
