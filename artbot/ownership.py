"""Which issues are artbot's: the marker inside the owned region *and* the author. Pure.

Copying an issue's body keeps its hidden comments, so a marker alone proves nothing: a
human who copies an artbot issue (or quotes one into the tracking issue) would otherwise
have their issue adopted, rewritten or closed as a duplicate. An issue counts as artbot's
only when its marker sits in the owned region (:meth:`artbot.marker.IssueMarker.find`)
and it was written by an identity artbot writes as: the token's login, or one of the
configured authors (by default ``github-actions[bot]``, the identity of an Actions run's
``GITHUB_TOKEN``). Anything else carrying a marker is *foreign*: reported, never written to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .models import Audit, ObservedIssue

# The login of issues filed with an Actions run's GITHUB_TOKEN.
ACTIONS_BOT = "github-actions[bot]"
DEFAULT_AUTHORS: tuple[str, ...] = (ACTIONS_BOT,)


@dataclass(frozen=True)
class Foreign:
    """An issue that carries artbot's marker but is not artbot's; left alone."""

    item: int
    issue: int
    author: str | None
    why: str

    def describe(self) -> str:
        return (
            f"item {self.item}: #{self.issue} carries artbot's marker but {self.why}; "
            "not artbot's, left alone"
        )


def _key(login: str | None) -> str:
    return (login or "").casefold()


def needs_login(observed: Iterable[ObservedIssue], audit: Audit, authors: Sequence[str]) -> bool:
    """True when some marked issue was written by none of ``authors``: only then is the
    token's own login worth a request."""
    known = {_key(a) for a in authors}
    return any(
        i.marker is not None and i.marker.audit == audit.commit and _key(i.author) not in known
        for i in observed
    )


def claim(
    observed: Iterable[ObservedIssue],
    audit: Audit,
    authors: Sequence[str],
    tracking_issue: int | None = None,
) -> tuple[list[ObservedIssue], list[Foreign]]:
    """``observed`` with the marker of every issue that is not artbot's taken away, and the
    list of those issues. The tracking issue (by number, or by the audit's tracking label) is
    never a finding's issue, whoever wrote it.
    """
    known = {_key(a) for a in authors}
    kept: list[ObservedIssue] = []
    foreign: list[Foreign] = []
    for issue in observed:
        marker = issue.marker
        if marker is None or marker.audit != audit.commit:
            kept.append(issue)
            continue
        why = _why_not_ours(issue, known, tracking_issue, audit.tracking_label)
        if why is None:
            kept.append(issue)
            continue
        foreign.append(Foreign(marker.item, issue.number, issue.author, why))
        kept.append(replace(issue, marker=None))
    return kept, foreign


def _why_not_ours(
    issue: ObservedIssue, known: set[str], tracking_issue: int | None, tracking_label: str | None
) -> str | None:
    if tracking_issue is not None and issue.number == tracking_issue:
        return "is the tracking issue"
    if tracking_label and tracking_label in issue.labels:
        return f"carries the tracking label {tracking_label!r}"
    if issue.pull_request:
        return "is a pull request"
    if _key(issue.author) not in known:
        who = f"@{issue.author}" if issue.author else "an unknown author"
        return f"was written by {who}"
    return None
