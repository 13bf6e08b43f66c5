"""Checks of what a user hands artbot, each a :class:`BadInput` (exit 2) naming the file or
the option and the field: status files, release versions, repository names, the API URL and
the token's shape, the logins of ``--author``. Pure, but for
reading the status files."""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

from .errors import BadInput, Problem
from .jsonlimits import loads_limited
from .records.models import LOGIN
from .settings import TOKEN_VARIABLES

# PEP 440's own pattern (its appendix), matched in full: nothing before or after, no newline.
_PEP440 = re.compile(
    r"""v?(?:(?:[0-9]+)!)?[0-9]+(?:\.[0-9]+)*
    (?:[-_.]?(?:a|b|c|rc|alpha|beta|pre|preview)[-_.]?[0-9]*)?
    (?:-[0-9]+|[-_.]?(?:post|rev|r)[-_.]?[0-9]*)?
    (?:[-_.]?dev[-_.]?[0-9]*)?
    (?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?""",
    re.VERBOSE | re.IGNORECASE,
)
MAX_VERSION = 64
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_REPO = re.compile(rf"{_OWNER}/{_NAME}")
# A repository's URL: https://host/O/N, ssh://[user@]host[:port]/O/N, user@host:O/N (scp-like
# SSH), or github.com/O/N without a scheme; "path" is O/N with any .git and trailing slash.
_REPOSITORY_URL = re.compile(
    r"(?:(?:https?|ssh|git)://(?:[^@/\s]+@)?[^/\s]+/|[^@/\s]+@[^:/\s]+:|(?:www\.)?github\.com/)"
    r"(?P<path>[^/\s]+/[^/\s]+?)(?:\.git)?/?"
)
MAX_STATUS_BYTES = 1024 * 1024


def check_version(version: str, option: str = "--release") -> str:
    """``version`` when it is a PEP 440 version (at most 64 characters), else BadInput."""
    if len(version) > MAX_VERSION or not _PEP440.fullmatch(version):
        shown = version[:40] + ("..." if len(version) > 40 else "")
        raise BadInput(f"{option} {shown!r}: not a version number (PEP 440, e.g. 0.5.21)")
    return version


def check_logins(logins: tuple[str, ...], option: str = "--author") -> tuple[str, ...]:
    """``logins`` when each is a GitHub login (``name`` or ``name[bot]``), else BadInput
    naming ``option`` and the first bad one (an empty item included)."""
    for login in logins:
        if not re.fullmatch(LOGIN, login):
            shown = login[:60] + ("..." if len(login) > 60 else "")
            raise BadInput(
                f"{option} {shown!r}: not a GitHub login (up to 39 letters, digits and "
                "hyphens, not starting with a hyphen; an App's bot: name[bot])"
            )
    return logins


def check_repository(name: str, option: str = "--repo") -> str:
    """``OWNER/NAME`` from what a user may give for a repository: ``OWNER/NAME`` (with or
    without ``.git``), its https URL, or its SSH URL (``git@github.com:OWNER/NAME.git``,
    ``ssh://git@github.com/OWNER/NAME``); anything else is BadInput, saying what to give."""
    text = name.strip()
    url = _REPOSITORY_URL.fullmatch(text)
    candidate = url["path"] if url else text
    candidate = candidate.removesuffix("/").removesuffix(".git")
    if _REPO.fullmatch(candidate) and candidate.split("/")[1] not in (".", ".."):
        return candidate
    shown = name[:100]
    raise BadInput(
        f"{option} {shown!r}: not a repository; give OWNER/NAME (e.g. OpenPipe/ART) or its "
        "https or SSH URL"
    )


def inside_workspace(workspace: Path, given: str, name: str) -> Path:
    """``given``, a folder relative to the workspace, as a path inside it: not absolute, no way
    out by ``..`` or by a symbolic link; else BadInput naming the input."""
    top = workspace.resolve()
    full = (top / given).resolve()
    if Path(given).is_absolute() or not (full == top or full.is_relative_to(top)):
        raise BadInput(f"{name}: {given[:100]!r}: give a folder inside the workspace")
    return full


def repository_to_use(flag: str | None, environment: str | None, default: str) -> str:
    """The repository a run files in, checked: ``--repo`` when given (an empty one is a mistake,
    not the default), else ``$GITHUB_REPOSITORY``, else the audited repository."""
    if flag is not None:
        return check_repository(flag, "--repo")
    return check_repository(
        environment or default, "$GITHUB_REPOSITORY" if environment else "repository"
    )


def missing_repository(
    name: str, api_url: str, api_source: str = "--api-url", *, api_found: bool = True
) -> BadInput:
    """What to say when GitHub answers 404 for the repository artbot was given: the
    repository's name, unless no GitHub API answers at ``api_url`` at all (``api_found``
    False), when it is the API URL's path (named by where it came from, ``api_source``)."""
    if not api_found:
        return BadInput(
            f"{api_source} {api_url}: no GitHub API answers there (its /rate_limit is not "
            "found either): check the URL's path (github.com's API is https://api.github.com, "
            "a GitHub Enterprise Server's https://HOST/api/v3)"
        )
    return BadInput(
        f"repository {name} not found at {api_url}: check its spelling (--repo or "
        "$GITHUB_REPOSITORY), and for a private repository that the token can read it (GitHub "
        "answers 404 to a token without access)"
    )


def status_problems(root: Path, items: set[int]) -> list[Problem]:
    """Every problem of the status files (``findings/status/NN.json``), located: not JSON, a
    byte-order mark, too large or deep, wrong fields or types, an item that is not the file's."""
    from pydantic import ValidationError

    from .status import STATUS_DIR, ItemStatus
    from .status.dating import DATING_FILE, AnchorDating

    problems = []
    for path in sorted((root / STATUS_DIR).glob("*.json")):
        shown = path.relative_to(root).as_posix()
        dating = path == root / DATING_FILE  # the audit's anchors per release, not an item's
        try:
            raw = path.read_bytes()
            if len(raw) > MAX_STATUS_BYTES:
                raise ValueError(f"over {MAX_STATUS_BYTES} bytes")
            data = loads_limited(raw.decode("utf-8"))
            if dating:
                AnchorDating.model_validate(data)
                continue
            status = ItemStatus.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                where = ".".join(str(p) for p in error["loc"])
                problems.append(Problem(shown, None, where, error["msg"]))
            continue
        except (OSError, ValueError) as exc:
            problems.append(Problem(shown, None, "", f"not a status record: {exc}"))
            continue
        if path.stem != f"{status.item:02d}":
            problems.append(Problem(shown, None, "item", f"{status.item} in {path.name}"))
        elif status.item not in items:
            problems.append(Problem(shown, None, "item", f"no finding has item {status.item}"))
    return problems


def check_api_url(url: str | None, option: str = "--api-url") -> None:
    """An API URL is http(s)://host[:port][/path], without query, fragment or credentials;
    else BadInput naming where it came from (``option``: ``--api-url`` or
    ``$GITHUB_API_URL``)."""
    if url is None:
        return
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or parts.username
        or parts.password
        or any(c.isspace() for c in url)
    ):
        raise BadInput(f"{option}: not an http(s) API URL: {url[:100]!r}")


def check_token(token: str | None, variable: str | None = None) -> None:
    """A token is one word of at least :data:`MIN_SECRET_LENGTH` characters: anything shorter
    could not be told apart from ordinary text, so it could not be redacted from output. The
    error names ``variable``, the one the token came from, when known."""
    from .report.output import MIN_SECRET_LENGTH

    if token is None:
        return
    if len(token) < MIN_SECRET_LENGTH or any(c.isspace() or not c.isprintable() for c in token):
        names = variable or " or ".join(TOKEN_VARIABLES)
        raise BadInput(
            f"{names} does not hold a GitHub token ({len(token)} characters"
            + (", with spaces or control characters" if len(token) >= MIN_SECRET_LENGTH else "")
            + "); set it to the token itself"
        )
