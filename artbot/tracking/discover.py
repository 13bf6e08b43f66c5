"""Finding the audit's tracking issue when none is configured (no ``--tracking-issue``, no
``$ARTBOT_TRACKING_ISSUE``, no ``tracking_issue`` in findings/audit.yaml).

The tracking issue is the issue whose body holds the audit's commit and its checklist: artbot's
checklist block, or, before artbot first wrote to it, the seed's "Dedicated issues" list (or
its title or first line, as :func:`artbot.tracking.ownership.check_tracking` accepts it). It
is looked for first among the labelled issues a run lists anyway (one carrying the tracking
label), then among the repository's open issues, read by listing (never by search: its index
lags). Exactly one such issue is used, and the run says which; none, or several, is bad input
naming both ways to configure it, before anything is written: artbot never files an issue the
checklist would not link.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..errors import BadInput
from ..records.marker import IssueMarker
from ..records.models import Audit
from ..records.observed import ObservedIssue
from .checklist import START_MARKER
from .ownership import tracking_by_label

CONFIGURE = (
    "give --tracking-issue N or set ARTBOT_TRACKING_ISSUE (or tracking_issue in "
    "findings/audit.yaml); nothing was filed"
)
SEED_LIST = "Dedicated issues"  # the seed's heading of the items already filed


def holds_checklist(issue: ObservedIssue, audit: Audit, seed: tuple[str, str] | None) -> bool:
    """Whether ``issue`` is the audit's tracking issue by its text: its body names the audit's
    commit and holds its checklist (artbot's block, or the seed's list, title or first line),
    and it is no finding's issue and no pull request."""
    body = issue.body or ""
    if issue.pull_request or audit.commit not in body or IssueMarker.find(body) is not None:
        return False
    lines = {line.strip().rstrip(":") for line in body.splitlines()}
    seeded = seed is not None and (
        issue.title.strip() == seed[0] or bool(seed[1] and seed[1] in body)
    )
    return START_MARKER in body or SEED_LIST in lines or seeded


def find_tracking(
    listed: Sequence[ObservedIssue],
    open_issues: Iterable[ObservedIssue] | None,
    audit: Audit,
    seed: tuple[str, str] | None,
) -> int:
    """The tracking issue's number: the one labelled as it among ``listed``, else the one of
    ``open_issues`` (read only when needed: pass an iterable that lists lazily) that
    :func:`holds_checklist`; else :class:`BadInput` naming how to configure it."""
    labelled = tracking_by_label(listed, audit)
    if labelled is not None:
        return labelled
    found = sorted({i.number for i in open_issues or () if holds_checklist(i, audit, seed)})
    if len(found) == 1:
        return found[0]
    if not found:
        raise BadInput(
            f"no tracking issue configured, and no open issue's body holds the audit's commit "
            f"{audit.commit} and its checklist: {CONFIGURE}"
        )
    shown = ", ".join(f"#{n}" for n in found[:5])
    raise BadInput(
        f"no tracking issue configured, and several open issues hold the audit's commit "
        f"{audit.commit} and its checklist ({shown}): {CONFIGURE}"
    )
