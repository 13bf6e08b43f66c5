"""Desired state (the catalog, rendered) against observed state (GitHub) -> a list of actions.

Pure: no I/O. A plan is a value that ``--dry-run`` prints, ``--json`` serialises, tests assert
on, and :mod:`artbot.apply` carries out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .checklist import ChecklistEntry
from .marker import owned_region
from .models import Audit, Finding, ObservedIssue
from .ownership import Foreign
from .panel import PanelAction
from .render import RenderedIssue
from .status.view import FILED_CLOSED, StatusView, stated_in_comments, stated_status
from .subissues import SubIssueAction


@dataclass(frozen=True)
class Create:
    item: int
    title: str
    labels: tuple[str, ...]
    # The recorded status decides how the issue is filed (see artbot.status.view):
    # fixed_in set -> filed, then closed as completed; partly_fixed_in -> open, scoped to
    # what remains.
    fixed_in: str | None = None
    partly_fixed_in: str | None = None

    def describe(self) -> str:
        text = f"item {self.item}: create issue {self.title!r}"
        if self.fixed_in:
            return f"{text}, then close it as completed (fixed in {self.fixed_in})"
        if self.partly_fixed_in:
            return f"{text}, open, scoped to what remains (partly fixed in {self.partly_fixed_in})"
        return text


@dataclass(frozen=True)
class CloseFixed:
    """Close an issue artbot filed for a fixed item whose close did not happen (a crash)."""

    item: int
    issue: int
    fixed_in: str

    def describe(self) -> str:
        return f"item {self.item}: close #{self.issue} as completed (fixed in {self.fixed_in})"


@dataclass(frozen=True)
class StatusChange:
    """The recorded status differs from what the issue states: one comment, then the edit."""

    item: int
    issue: int
    before: str | None
    after: str

    def describe(self) -> str:
        was = self.before or "no status"
        return f"item {self.item}: status of #{self.issue} changed ({was} -> {self.after})"


@dataclass(frozen=True)
class CloseWhenFixed:
    """``close_when_fixed``: a status change to fixed closes the issue artbot filed."""

    item: int
    issue: int
    fixed_in: str

    def describe(self) -> str:
        return (
            f"item {self.item}: close #{self.issue} as completed, every claim fixed in "
            f"{self.fixed_in} (close_when_fixed)"
        )


@dataclass(frozen=True)
class Exists:
    item: int
    issue: int
    state: str

    def describe(self) -> str:
        return f"item {self.item}: already filed as #{self.issue} ({self.state})"


@dataclass(frozen=True)
class Preset:
    item: int
    issue: int

    def describe(self) -> str:
        return f"item {self.item}: has its own issue #{self.issue} (never filed by artbot)"


@dataclass(frozen=True)
class LinkPreset:
    """Give a pre-existing issue the audit's labels so the one labelled list call sees it."""

    item: int
    issue: int
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"item {self.item}: label #{self.issue} with {', '.join(self.labels)}"


@dataclass(frozen=True)
class LabelTracking:
    """Give the tracking issue the audit's labels and its own, once, so that the labelled
    list returns it and a sync with nothing to do needs no request of its own for it."""

    issue: int
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: label it {', '.join(self.labels)}"


@dataclass(frozen=True)
class EditBody:
    item: int
    issue: int

    def describe(self) -> str:
        return f"item {self.item}: update the artbot part of #{self.issue}'s body"


@dataclass(frozen=True)
class CloseDuplicate:
    item: int
    issue: int
    keep: int

    def describe(self) -> str:
        return f"item {self.item}: close #{self.issue} as a duplicate of #{self.keep}"


@dataclass(frozen=True)
class Duplicate:
    """Reported by sync, which never closes anything."""

    item: int
    issue: int
    keep: int

    def describe(self) -> str:
        return f"item {self.item}: #{self.issue} duplicates #{self.keep} (run `artbot open`)"


@dataclass(frozen=True)
class UpdateChecklist:
    issue: int
    entries: tuple[ChecklistEntry, ...]

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: update the checklist"


@dataclass(frozen=True)
class ChecklistUpToDate:
    issue: int

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: checklist up to date"


@dataclass(frozen=True)
class Comment:
    """A verification comment on a generated issue (posted once per status change)."""

    item: int
    issue: int
    body: str

    def describe(self) -> str:
        first = self.body.splitlines()[1] if "\n" in self.body else self.body
        return f"item {self.item}: comment on #{self.issue}: {first}"


Action = (
    Create
    | CloseFixed
    | CloseWhenFixed
    | StatusChange
    | Exists
    | Preset
    | LinkPreset
    | LabelTracking
    | EditBody
    | CloseDuplicate
    | Duplicate
    | UpdateChecklist
    | ChecklistUpToDate
    | Comment
    | SubIssueAction
    | PanelAction
    | Foreign
)


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...] = field(default_factory=tuple)

    def of(self, kind: type) -> list[Any]:
        return [a for a in self.actions if isinstance(a, kind)]

    def text(self) -> str:
        return "\n".join(a.describe() for a in self.actions) or "nothing to do"

    def as_json(self) -> list[dict[str, Any]]:
        out = []
        for a in self.actions:
            data = asdict(a)
            data["action"] = type(a).__name__
            out.append(data)
        return out


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
                **(_fixed((views or {}).get(f.item)) or _found_in(f)),
            )
        )
    return tuple(entries)


def _found_in(finding: Finding) -> dict[str, str | None]:
    """A follow-up with no recorded status is present in the release artbot found it in."""
    return {"present_in": finding.checked_release} if finding.checked_release else {}


def _fixed(view: StatusView | None) -> dict[str, str | None]:
    if view is None:
        return {}
    if view.fixed_in:
        return {"fixed_in": view.fixed_in}
    firsts = sorted((r.fixed_in for r in view.fixed if r.fixed_in), key=lambda v: _version_key(v))
    if firsts:
        return {"partly_fixed_in": firsts[0]}
    return {"present_in": view.newest} if view.remaining and view.newest else {}


def _version_key(version: str) -> tuple[Any, ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in version.split("."))


def _state(issue: ObservedIssue) -> Any:
    return "closed" if issue.state == "closed" else "open"


def _preset_links(
    findings: Sequence[Finding], observed: Sequence[ObservedIssue], audit: Audit
) -> list[Action]:
    seen = {i.number for i in observed}
    return [
        LinkPreset(f.item, f.issue, tuple(audit.labels))
        for f in findings
        if f.issue and f.issue not in seen and audit.labels
    ]


def plan_open(
    findings: Sequence[Finding],
    rendered: Mapping[int, RenderedIssue],
    observed: Sequence[ObservedIssue],
    audit: Audit,
    tracking_issue: int | None,
    views: Mapping[int, StatusView | None] | None = None,
) -> Plan:
    """What ``artbot open`` will do for ``findings`` (already selected).

    ``views`` is each item's recorded status: a fully fixed item is filed and then closed as
    completed, and an issue filed that way whose close was lost is closed on the next run.
    """
    found = canonical(observed, audit)
    actions: list[Action] = []
    for f in findings:
        view = (views or {}).get(f.item)
        if f.issue:
            actions.append(Preset(f.item, f.issue))
        elif f.item in found:
            issue = found[f.item]
            actions.append(Exists(f.item, issue.number, issue.state))
            if view is not None and view.fixed_in and close_was_lost(issue):
                actions.append(CloseFixed(f.item, issue.number, view.fixed_in))
        else:
            r = rendered[f.item]
            filed_as = {k: v for k, v in _fixed(view).items() if k != "present_in"}
            actions.append(Create(f.item, r.title, r.labels, **filed_as))
    items = {f.item for f in findings}
    actions += [
        CloseDuplicate(i.marker.item, i.number, keep)
        for i, keep in duplicates(observed, audit)
        if i.marker is not None and i.marker.item in items
    ]
    if tracking_issue:
        # Entries are recomputed after the creates, when the new numbers are known.
        actions.append(UpdateChecklist(tracking_issue, ()))
    return Plan(tuple(actions))


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


def status_comment(
    change: StatusChange, comment_bodies: Sequence[str], text: str
) -> Comment | None:
    """The comment for ``change`` unless the newest artbot status comment already states it
    (a re-run after a crash between the comment and the body edit)."""
    if stated_in_comments(comment_bodies, change.item) == change.after:
        return None
    return Comment(change.item, change.issue, text)


def plan_sync(
    findings: Sequence[Finding],
    rendered: Mapping[int, RenderedIssue],
    observed: Sequence[ObservedIssue],
    audit: Audit,
    tracking_issue: int | None,
    tracking_block: str | None,
    render_block: Any,
    notes: Mapping[int, str] | None = None,
    views: Mapping[int, StatusView | None] | None = None,
) -> Plan:
    """What ``artbot sync`` will do. ``render_block(entries) -> str`` renders the checklist.

    When an item's recorded status differs from the one its issue's region states, a
    :class:`StatusChange` (one comment) comes before the :class:`EditBody` that updates the
    status table. Sync never reopens, and closes only with ``audit.close_when_fixed``: a status
    change to "every claim fixed" then closes the open issue artbot filed
    (:class:`CloseWhenFixed`, right after the change's one comment).
    """
    found = canonical(observed, audit)
    actions: list[Action] = list(_preset_links(findings, observed, audit))
    closing: dict[int, ObservedIssue] = {}
    for f in findings:
        issue = found.get(f.item)
        if issue is None or f.issue:
            continue
        view = (views or {}).get(f.item)
        region = owned_region(issue.body)
        before = stated_status(region, f.item)
        if view is not None and before != view.state:
            actions.append(StatusChange(f.item, issue.number, before, view.state))
            if audit.close_when_fixed and view.fixed_in and issue.state == "open":
                actions.append(CloseWhenFixed(f.item, issue.number, view.fixed_in))
                closing[issue.number] = replace(issue, state="closed", state_reason="completed")
        want = owned_region(rendered[f.item].body)
        if region != want:
            actions.append(EditBody(f.item, issue.number))
    actions += [
        Duplicate(i.marker.item, i.number, keep)
        for i, keep in duplicates(observed, audit)
        if i.marker is not None
    ]
    if tracking_issue:
        # The checklist as it will read once the closes above are done.
        after = [closing.get(i.number, i) for i in observed]
        entries = checklist_entries(findings, after, audit, notes, views)
        if tracking_block == render_block(entries):
            actions.append(ChecklistUpToDate(tracking_issue))
        else:
            actions.append(UpdateChecklist(tracking_issue, entries))
    return Plan(tuple(actions))
