"""The upstream change behind a fix: which commit (and pull request) added the fixing line.

For a claim fixed in release X, ``findings/status/`` holds the fixing lines in X, each with
the line to look for. :func:`find_change` asks ART's repository on GitHub, through the adapter's
read (:meth:`artbot.github.client.GitHubRepo.read_upstream`):

1. compare the audit commit with X's tag (``v{X}``, else ``{X}``): the commits in between;
2. list the commits that touch the fixing file up to the tag, and keep those in between;
3. read each (at most :data:`MAX_CANDIDATES`): the commit whose patch adds the line to look
   for is the change; its pull request, when GitHub knows one, names it.

Anything else is a :class:`~artbot.status.Change` with ``identified=False`` and a note that
says why (no such tag upstream, no commit in between touches the file, several add the
line, GitHub answering an error...); those are asked again on the next run. GitHub not
reached fails the lookup: nothing is recorded. What GitHub returns is
untrusted: shas must be hex, URLs must be on the audit's web host under its repository, titles
are cut to one plain line. :func:`record_changes` applies the results to the status records;
the I/O is the adapter's, this module is pure given ``read``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import RemoteError
from ..records.models import Audit
from ..status import Change, ItemStatus, SourceLine

Read = Callable[[str, dict[str, Any] | None], Any]  # endpoint under /repos/{repository}/, params
MAX_CANDIDATES = 20
_SHA = re.compile(r"^[0-9a-f]{40}$")


def repo_path(audit: Audit, line: SourceLine) -> str:
    """``art/loss.py`` (the wheel's layout) as the repository keeps it: ``src/art/loss.py``."""
    package = audit.source_root.rstrip("/").rsplit("/", 1)[-1]
    return audit.source_root.rstrip("/") + "/" + line.path.removeprefix(package + "/")


def find_change(read: Read, audit: Audit, version: str, line: SourceLine) -> Change:
    """The change between the audit commit and release ``version`` that added ``line``; not
    identified, saying why, when GitHub answered with an error. GitHub not reached (no
    connection, a time-out, no answer after the retries) is no finding about the change: that
    :class:`RemoteError` propagates, the command fails, and nothing is recorded."""
    try:
        return _find(read, audit, version, line)
    except RemoteError as exc:  # the message may hold what GitHub said; the status does not
        if not exc.status:
            raise
        return Change(identified=False, note=f"GitHub answered {exc.status} when artbot asked")


def _find(read: Read, audit: Audit, version: str, line: SourceLine) -> Change:
    compare, tag = None, None
    for candidate in (f"v{version}", version):
        compare = read(f"compare/{audit.commit}...{candidate}", None)
        if compare is not None:
            tag = candidate
            break
    if compare is None or tag is None:
        return Change(
            identified=False,
            note=f"{audit.repository} has no tag v{version} (or {version}) that GitHub can "
            f"compare with {audit.commit}",
        )
    between = {c.get("sha") for c in _list(compare.get("commits"))}
    path = repo_path(audit, line)
    listed = read("commits", {"sha": tag, "path": path, "per_page": 100})
    touching = [c["sha"] for c in _list(listed) if c.get("sha") in between]
    span = f"between {audit.commit} and {tag}"
    if not touching:
        return Change(identified=False, note=f"no commit {span} changes {path}")
    adding = []
    for sha in touching[:MAX_CANDIDATES]:
        commit = read(f"commits/{sha}", None) or {}
        files = [f for f in _list(commit.get("files")) if f.get("filename") == path]
        if any(_adds(f.get("patch"), line.look_for) for f in files):
            adding.append(commit)
    if len(adding) != 1:
        how_many = "none" if not adding else str(len(adding))
        return Change(
            identified=False,
            note=f"{len(touching)} commit(s) {span} change {path}; {how_many} of those read adds "
            f"the line {_plain(line.look_for, 80)!r}",
        )
    return _identified(read, audit, adding[0])


def _identified(read: Read, audit: Audit, commit: dict[str, Any]) -> Change:
    sha = str(commit.get("sha", ""))
    if not _SHA.match(sha):
        return Change(identified=False, note="GitHub named a commit without a valid sha")
    web = f"{audit.web_url.rstrip('/')}/{audit.repository}/"
    pulls = [p for p in _list(read(f"commits/{sha}/pulls", None)) if _pull_number(p)]
    message = str((commit.get("commit") or {}).get("message", "")).splitlines()
    if pulls:
        pull = pulls[0]
        number = _pull_number(pull)
        url = _on(web, pull.get("html_url")) or f"{web}pull/{number}"
        title = _plain(pull.get("title"), 200)
    else:
        number, url = None, _on(web, commit.get("html_url")) or f"{web}commit/{sha}"
        title = _plain(message[0] if message else "", 200)
    return Change(identified=True, commit=sha, pull=number, url=url, title=title)


def _list(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _pull_number(pull: dict[str, Any]) -> int | None:
    number = pull.get("number")
    return (
        number if isinstance(number, int) and not isinstance(number, bool) and number > 0 else None
    )


def _on(web: str, url: Any) -> str | None:
    """``url`` when it is a page of the audit's repository on its web host, else None."""
    return url if isinstance(url, str) and url.startswith(web) and url.isprintable() else None


def _plain(text: Any, limit: int) -> str:
    """One printable line, at most ``limit`` characters."""
    flat = " ".join(str(text or "").split())
    flat = "".join(ch for ch in flat if ch.isprintable())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _adds(patch: Any, look_for: str) -> bool:
    wanted = look_for.strip()
    return isinstance(patch, str) and any(
        line.startswith("+") and not line.startswith("+++") and line[1:].strip() == wanted
        for line in patch.splitlines()
    )


def record_changes(
    status: ItemStatus, audit: Audit, read: Read, *, refresh: bool = False
) -> tuple[ItemStatus, list[str]]:
    """``status`` with a change found for every fixed claim's fix at the release that fixed it
    (an identified one is kept, unless ``refresh``; one not identified is asked again); and one
    line per change looked up."""
    report: list[str] = []
    points = list(status.points)
    for index, point in enumerate(points):
        claims = dict(point.claims)
        for cid, result in point.claims.items():
            if point.source != "release" or status.fixed_in(cid) != point.label:
                continue
            known = result.fix.change if result.fix is not None else None
            if result.fix is None or (known is not None and known.identified and not refresh):
                continue
            change = None
            for line in result.fix.lines:
                change = find_change(read, audit, point.label, line)
                if change.identified:
                    break
            assert change is not None  # FixEvidence has at least one line
            said = change.url if change.identified else f"not identified: {change.note}"
            report.append(f"item {status.item} {cid} fixed in {point.label}: {said}")
            claims[cid] = result.model_copy(
                update={"fix": result.fix.model_copy(update={"change": change})}
            )
        points[index] = point.model_copy(update={"claims": claims})
    return status.model_copy(update={"points": points}), report
