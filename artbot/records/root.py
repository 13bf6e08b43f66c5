"""Where the audit's records are when ``--root`` is not given, and where artbot writes: the
rules are docs/design.md's (``records/root.py``). A command that records on the shipped records
writes a copy of them in the user's cache directory (:func:`records_copy`) and reads that copy
from then on; the ETag cache goes there too (:func:`default_cache_path`). Each such write says
where.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from ..settings import user_cache_dir

PACKAGED = "_audit"  # artbot/_audit in a built package: findings/, templates/, repros/
RECORD_FOLDERS = ("findings", "templates", "repros")


def _has_records(folder: Path) -> bool:
    return (folder / "findings" / "audit.yaml").is_file()


def _package() -> Path:
    return Path(__file__).resolve().parents[1]


def packaged_root() -> Path | None:
    """The records shipped with artbot: in its own checkout, or inside the installed package."""
    package = _package()
    for folder in (package / PACKAGED, package.parent):
        if _has_records(folder):
            return folder
    return None


def is_installed_records(root: Path) -> bool:
    """``root`` is the records inside the installed package (``artbot/_audit``)."""
    return root.resolve() == _package() / PACKAGED


def records_copy(env: Mapping[str, str] | None = None) -> Path:
    """Where the user's copy of the shipped records is kept, one per artbot version (a newer
    artbot ships newer records)."""
    from .. import __version__

    return user_cache_dir(env) / "records" / __version__


def is_shipped_records(root: Path) -> bool:
    """``root`` is the records installed with artbot, or the user's copy of them."""
    return is_installed_records(root) or root.resolve() == records_copy().resolve()


def find_root(given: Path | None, cwd: Path | None = None) -> Path:
    """``given`` when given (``--root``); else the current folder when it holds ``findings/``;
    else the records artbot ships (the user's copy of them when a command recorded into one);
    else the current folder (whose missing findings/ is then reported as today)."""
    if given is not None:
        return given
    here = Path(".") if cwd is None else cwd
    if (here / "findings").is_dir():
        return here
    shipped = packaged_root()
    if shipped is not None and is_installed_records(shipped) and _has_records(records_copy()):
        return records_copy()
    return shipped or here


def writable_root(root: Path) -> tuple[Path, str | None]:
    """Where a command that records writes for the records at ``root``, and a note to say
    when that is not ``root``: the installed package's records are copied once to
    :func:`records_copy` (never written in place); any other root is the user's own."""
    if not is_installed_records(root):
        return root, None
    copy = records_copy()
    if not _has_records(copy):
        staging = copy.with_name(copy.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        for name in RECORD_FOLDERS:
            if (root / name).is_dir():
                shutil.copytree(
                    root / name, staging / name, ignore=shutil.ignore_patterns("__pycache__")
                )
        shutil.rmtree(copy, ignore_errors=True)
        staging.replace(copy)  # whole or not at all: find_root reads it once it is there
    note = (
        f"records: the records installed with artbot are not written in place; this run "
        f"records into your copy, {copy} (read from now on; --root DIR for another)"
    )
    return copy, note


def default_cache_path(root: Path) -> Path:
    """Where ``open`` and ``sync`` keep their ETag cache without ``--cache``: ``ROOT/.artbot``
    for the user's own records, and for the records installed with artbot (not theirs to
    write, nor the folder artbot runs in, an ART checkout), the user's cache directory."""
    if is_shipped_records(root):
        return user_cache_dir() / "etags" / "cache.json"
    return root / ".artbot" / "cache.json"
