"""Where artbot's own files are hosted, for the links to full repro scripts: found once per run.

The order in which the repository is looked for is the README's ("Links to artbot's own
scripts"). Both it and the commit (``git rev-parse HEAD`` of ``--root``) are read here, before
rendering, so :mod:`artbot.render.issue` starts no process; when none is known the CLI says
so once, with what it found instead (:meth:`ToolSource.note`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import BadInput
from .root import is_shipped_records

PLACEHOLDER = "OWNER/"


@dataclass(frozen=True)
class ToolSource:
    """artbot's hosting repository and commit; either may be unknown."""

    repository: str | None = None
    commit: str | None = None
    origin: str = ""  # where the repository came from, for messages
    found: str = ""  # when not known: what was looked at instead ("no git remote origin")

    @property
    def known(self) -> bool:
        return self.repository is not None

    def note(self) -> str | None:
        """The line to print where an issue is rendered without the links, else None."""
        if self.known:
            return None
        return (
            f"note: artbot's repository is not known ({self.found}), so the issues name each "
            "script and test without a link; give --tool-repository OWNER/NAME to link them"
        )


def check_repository(value: str, where: str) -> str:
    """``value`` (``owner/name`` or its URL) as an ``owner/name``, or :class:`BadInput` naming
    ``where``: the one repository parser (:func:`artbot.inputs.check_repository`), and not the
    placeholder ``OWNER/...`` of an example."""
    from ..inputs import check_repository as parsed

    name = parsed(value, where)
    if name.startswith(PLACEHOLDER):
        raise BadInput(f"{where} {value[:100]!r}: a placeholder, not a repository")
    return name


def parse_remote(url: str) -> str | None:
    """``owner/name`` from a git remote URL, or None for one that is not of that shape."""
    if "://" not in url and "@" not in url:
        return None  # a local path, not a URL
    try:
        return check_repository(url, "git remote origin")
    except BadInput:
        return None


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except (ValueError, OSError):
        return False
    return True


def resolve_tool_source(
    root: Path,
    *,
    flag: str | None = None,
    configured: str | None = None,
    actions_repository: str | None = None,
    workspace: Path | None = None,
) -> ToolSource:
    """The tool source for a run at ``root`` (see the module docstring for the order)."""
    sha = _git(root, "rev-parse", "HEAD")
    commit = sha if sha and re.fullmatch(r"[0-9a-f]{40}", sha) else None
    if flag:
        return ToolSource(check_repository(flag, "--tool-repository"), commit, "--tool-repository")
    if configured:
        return ToolSource(configured, commit, "findings/audit.yaml")
    if actions_repository and workspace is not None and _inside(root, workspace):
        repository = check_repository(actions_repository, "GITHUB_REPOSITORY")
        return ToolSource(repository, commit, "GITHUB_REPOSITORY")
    remote = _git(root, "remote", "get-url", "origin")
    parsed = parse_remote(remote) if remote else None
    if parsed:
        return ToolSource(parsed, commit, "git remote origin")
    if remote:
        found = f"git remote origin is {_shown(remote)}, not a repository URL such as GitHub's"
    elif sha is None and is_shipped_records(root):
        found = "the records installed with artbot are in no git checkout"
    elif sha is None:
        found = f"--root {root} is not in a git checkout"
    else:
        found = "this checkout has no git remote origin"
    if actions_repository:
        found += "; not run in the checkout of $GITHUB_REPOSITORY"
    return ToolSource(None, commit, "", found)


def _shown(remote: str) -> str:
    """A remote URL as it may be printed: the user part of a URL left out (it may be a token)."""
    parts = urlsplit(remote)
    if parts.scheme and "@" in parts.netloc:
        return parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]).geturl()
    return remote
