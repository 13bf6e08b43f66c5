"""An issue as GitHub reports it (:class:`ObservedIssue`): what the planner compares the catalog
with. It lives with the records, not in the GitHub adapter, so the planner loads no GitHub client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .marker import IssueMarker


@dataclass(frozen=True)
class SubIssuesSummary:
    """GitHub's ``sub_issues_summary`` of an issue: how many sub-issues, how many closed."""

    total: int
    completed: int
    percent_completed: int


@dataclass(frozen=True)
class ObservedIssue:
    """An issue as GitHub reports it (never a pull request). ``id`` is GitHub's issue id (the
    sub-issue endpoints take it); ``sub_issues`` is None where the payload has none."""

    number: int
    title: str
    body: str
    state: str
    state_reason: str | None
    html_url: str
    labels: tuple[str, ...]
    marker: IssueMarker | None
    id: int | None = None
    sub_issues: SubIssuesSummary | None = None
    # Who wrote the issue (``user.login``): with the marker, what makes an issue artbot's
    # (see artbot.tracking.ownership). A pull request or a locked issue is never written to.
    author: str | None = None
    locked: bool = False
    pull_request: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ObservedIssue:
        body = data.get("body") or ""
        return cls(
            number=int(data["number"]),
            title=data.get("title") or "",
            body=body,
            state=data.get("state") or "open",
            state_reason=data.get("state_reason"),
            html_url=data.get("html_url") or "",
            labels=tuple(
                lbl["name"] if isinstance(lbl, dict) else str(lbl)
                for lbl in data.get("labels") or ()
            ),
            marker=IssueMarker.find(body),
            id=int(data["id"]) if isinstance(data.get("id"), int) else None,
            sub_issues=_summary(data.get("sub_issues_summary")),
            author=(data.get("user") or {}).get("login"),
            locked=bool(data.get("locked")),
            pull_request="pull_request" in data,
        )


def _summary(data: Any) -> SubIssuesSummary | None:
    if not isinstance(data, dict):
        return None
    try:
        return SubIssuesSummary(
            int(data["total"]), int(data["completed"]), int(data["percent_completed"])
        )
    except (KeyError, TypeError, ValueError):
        return None
