"""Which issue is each item's, as GitHub holds it: the one issue per item every run agrees
on, its duplicates, and the checklist lines that follow. Pure: no I/O."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..records.models import Audit, Finding
from ..records.observed import ObservedIssue
from ..render.status_view import FILED_CLOSED, StatusView
from ..status import version_key
from ..tracking.checklist import ChecklistEntry
from .actions import Action, LinkPreset


def ours(observed: Iterable[ObservedIssue], audit: Audit) -> list[ObservedIssue]:
    """Issues carrying a marker of this audit (an audit at another commit is not ours)."""
    return [i for i in observed if i.marker is not None and i.marker.audit == audit.commit]


def canonical(observed: Iterable[ObservedIssue], audit: Audit) -> dict[int, ObservedIssue]:
    """One issue per item: the lowest-numbered one not closed as a duplicate.

    Lowest number is a choice every concurrent run agrees on without talking to the others.
    """
    best: dict[int, ObservedIssue] = {}
    for issue in sorted(ours(observed, audit), key=lambda i: (_is_dupe(i), i.number)):
        assert issue.marker is not None
        best.setdefault(issue.marker.item, issue)
    return best


def duplicates(observed: Iterable[ObservedIssue], audit: Audit) -> list[tuple[ObservedIssue, int]]:
    """(extra issue, number kept) for every open extra issue of an item."""
    keep = canonical(observed, audit)
    out = []
    for issue in ours(observed, audit):
        assert issue.marker is not None
        kept = keep[issue.marker.item]
        if issue.number != kept.number and not _is_dupe(issue):
            out.append((issue, kept.number))
    return out


def _is_dupe(issue: ObservedIssue) -> bool:
    return issue.state == "closed" and issue.state_reason == "duplicate"


def checklist_entries(
    findings: Sequence[Finding],
    observed: Sequence[ObservedIssue],
    audit: Audit,
    notes: Mapping[int, str] | None = None,
    views: Mapping[int, StatusView | None] | None = None,
) -> tuple[ChecklistEntry, ...]:
    """The checklist as it should read given what GitHub holds now (and the recorded status)."""
    found = canonical(observed, audit)
    by_number = {i.number: i for i in observed}
    entries = []
    for f in findings:
        issue = by_number.get(f.issue) if f.issue else found.get(f.item)
        number = f.issue or (issue.number if issue else None)
        entries.append(
            ChecklistEntry(
                item=f.item,
                # The issue's own title once artbot filed it (sync keeps it the rendered one).
                title=issue.title if issue is not None and not f.issue and issue.title else f.title,
                follows=f.follows,
                issue=number,
                state=_state(issue) if issue else ("open" if number else None),
                state_reason=issue.state_reason if issue and issue.state == "closed" else None,
                note=(notes or {}).get(f.item),
                filed=f.issue is None and issue is not None,
                **(fixed_fields((views or {}).get(f.item)) or _found_in(f)),
            )
        )
    return tuple(entries)


def _found_in(finding: Finding) -> dict[str, str | None]:
    """A follow-up with no recorded status is present in the release artbot found it in."""
    return {"present_in": finding.checked_release} if finding.checked_release else {}


def fixed_fields(view: StatusView | None) -> dict[str, str | None]:
    """The checklist line's release fields from the recorded status: fixed in, partly fixed
    in (with what remains, when it is one claim), or (no claim fixed) still present in the
    newest release checked."""
    if view is None:
        return {}
    if view.fixed_in:
        return {"fixed_in": view.fixed_in}
    firsts = sorted((r.fixed_in for r in view.fixed if r.fixed_in), key=version_key)
    if firsts:
        return {"partly_fixed_in": firsts[0], "remaining": view.title}
    return {"present_in": view.newest} if view.remaining and view.newest else {}


def filed_as(view: StatusView | None) -> dict[str, str | None]:
    """What ``Create`` records of the status: fixed or partly fixed in (not 'present in')."""
    return {k: v for k, v in fixed_fields(view).items() if k not in ("present_in", "remaining")}


def _state(issue: ObservedIssue) -> Any:
    return "closed" if issue.state == "closed" else "open"


def preset_links(
    findings: Sequence[Finding], observed: Sequence[ObservedIssue], audit: Audit
) -> list[Action]:
    seen = {i.number for i in observed}
    return [
        LinkPreset(f.item, f.issue, tuple(audit.labels))
        for f in findings
        if f.issue and f.issue not in seen and audit.labels
    ]


def close_was_lost(issue: ObservedIssue) -> bool:
    """artbot filed ``issue`` to be closed (the marker outside its region says so), it is
    open, and it was never closed: GitHub sets ``state_reason: reopened`` when a human
    reopens an issue, and that decision is never overridden."""
    return issue.state == "open" and issue.state_reason is None and FILED_CLOSED in issue.body


def filed_body(body: str, view: StatusView | None) -> str:
    """The body ``open`` creates: a fixed item's carries :data:`FILED_CLOSED` before the owned
    region, where ``sync`` never rewrites it, so a re-run can tell a lost close from a
    human's decision to keep the issue open."""
    return f"{FILED_CLOSED}\n{body}" if view is not None and view.fixed_in else body


def closes(audit: Audit, view: StatusView | None, issue: ObservedIssue) -> bool:
    """``close_when_fixed``: a status change to "every claim fixed" closes the open issue."""
    return bool(audit.close_when_fixed and view is not None and view.fixed_in) and (
        issue.state == "open"
    )


def with_refs(
    entries: Sequence[ChecklistEntry], creates: Sequence[Any]
) -> tuple[ChecklistEntry, ...]:
    """The checklist lines once the issues ``creates`` file are filed: each names its issue by
    :func:`artbot.run.blockwrite.ref` (its number is looked up when the block is written),
    with the title it is filed under, closed as completed when it is filed fixed."""
    from dataclasses import replace

    from .blockwrite import ref

    filing = {c.item: c for c in creates}
    return tuple(
        replace(
            e,
            issue=ref(e.item),
            title=filing[e.item].title or e.title,  # as a re-run reads it
            state="closed" if filing[e.item].fixed_in else "open",
            state_reason="completed" if filing[e.item].fixed_in else None,
            filed=True,
        )
        if e.item in filing and e.issue is None
        else e
        for e in entries
    )
