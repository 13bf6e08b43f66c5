"""Which issues are artbot's: the marker inside the owned region *and* the author; which
issue is the tracking issue. Pure, but for reading the seed's title.

Copying an issue's body keeps its hidden comments, so a marker alone proves nothing: a
human who copies an artbot issue (or quotes one into the tracking issue) would otherwise
have their issue adopted, rewritten or closed as a duplicate. An issue counts as artbot's
only when its marker sits in the owned region (:meth:`artbot.records.marker.IssueMarker.find`)
and it was written by the identity artbot writes as, or by one of the configured authors
(``--author``; the action passes ``github-actions[bot]`` only when its token is the run's
own ``GITHUB_TOKEN``). Anything else carrying a marker is *foreign*: reported, never
written to. Which logins those are is :mod:`artbot.run.identity`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import BadInput
from ..records.marker import IssueMarker
from ..records.models import Audit
from ..records.observed import ObservedIssue


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


def check_tracking(
    issue: ObservedIssue, audit: Audit, seed: tuple[str, str] | None, *, has_block: bool
) -> None:
    """``issue`` is the audit's tracking issue, or :class:`BadInput` (exit 2) before any write
    (a typo in ``--tracking-issue`` must not write into a finding's issue): it holds the block
    or carries the tracking label, or has the seed's title or first line (its first sync)."""
    number = issue.number
    label = audit.tracking_label
    if has_block or (label and label in issue.labels):
        return
    if seed and (issue.title.strip() == seed[0] or (seed[1] and seed[1] in (issue.body or ""))):
        return
    marker = IssueMarker.find(issue.body)
    fix = "check --tracking-issue (or tracking_issue in findings/audit.yaml); nothing was written"
    if marker is not None:
        raise BadInput(f"#{number} is item {marker.item}'s issue, not the tracking issue: {fix}")
    why = "it has no checklist block" + (f", no {label!r} label" if label else "")
    if seed:
        why += f" and neither the seed's title {seed[0][:80]!r} nor its text"
    raise BadInput(f"#{number} is not the audit's tracking issue ({why}): {fix}")


NO_TRACKING = (
    "no tracking issue (--tracking-issue, findings/audit.yaml or the tracking label): "
    "no issue body was changed"
)


def seed_title(root: Path) -> tuple[str, str] | None:
    """The seed tracking issue (``findings/tracking-issue.md``): its title (the first line)
    and its body's first line of text."""
    seed = root / "findings" / "tracking-issue.md"
    if not seed.is_file():
        return None
    title, _, body = seed.read_text(encoding="utf-8").partition("\n")
    first = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return title.strip(), first


def tracking_by_label(observed: Iterable[ObservedIssue], audit: Audit) -> int | None:
    """The one listed issue carrying the tracking label, when exactly one does."""
    label = audit.tracking_label
    found = [i.number for i in observed if label and label in i.labels and not i.pull_request]
    return found[0] if len(found) == 1 else None
