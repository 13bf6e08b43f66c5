"""Desired state (the catalog, rendered) against observed state (GitHub) -> a list of actions.

Pure: no I/O. A plan is a value that ``--dry-run`` prints, ``--json`` serialises, tests assert
on, and :mod:`artbot.apply` carries out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .checklist import ChecklistEntry
from .marker import owned_region
from .models import Audit, Finding, ObservedIssue
from .render import RenderedIssue


@dataclass(frozen=True)
class Create:
    item: int
    title: str
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"item {self.item}: create issue {self.title!r}"


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
    | Exists
    | Preset
    | LinkPreset
    | EditBody
    | CloseDuplicate
    | Duplicate
    | UpdateChecklist
    | ChecklistUpToDate
    | Comment
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
) -> tuple[ChecklistEntry, ...]:
    """The checklist as it should read given what GitHub holds now."""
    found = canonical(observed, audit)
    by_number = {i.number: i for i in observed}
    entries = []
    for f in findings:
        issue = by_number.get(f.issue) if f.issue else found.get(f.item)
        number = f.issue or (issue.number if issue else None)
        entries.append(
            ChecklistEntry(
                item=f.item,
                title=f.title,
                issue=number,
                state=_state(issue) if issue else ("open" if number else None),
                state_reason=issue.state_reason if issue and issue.state == "closed" else None,
                note=(notes or {}).get(f.item),
            )
        )
    return tuple(entries)


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
) -> Plan:
    """What ``artbot open`` will do for ``findings`` (already selected)."""
    found = canonical(observed, audit)
    actions: list[Action] = []
    for f in findings:
        if f.issue:
            actions.append(Preset(f.item, f.issue))
        elif f.item in found:
            actions.append(Exists(f.item, found[f.item].number, found[f.item].state))
        else:
            r = rendered[f.item]
            actions.append(Create(f.item, r.title, r.labels))
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


def plan_sync(
    findings: Sequence[Finding],
    rendered: Mapping[int, RenderedIssue],
    observed: Sequence[ObservedIssue],
    audit: Audit,
    tracking_issue: int | None,
    tracking_block: str | None,
    render_block: Any,
    notes: Mapping[int, str] | None = None,
) -> Plan:
    """What ``artbot sync`` will do. ``render_block(entries) -> str`` renders the checklist."""
    found = canonical(observed, audit)
    actions: list[Action] = list(_preset_links(findings, observed, audit))
    for f in findings:
        issue = found.get(f.item)
        if issue is None or f.issue:
            continue
        want = owned_region(rendered[f.item].body)
        if owned_region(issue.body) != want:
            actions.append(EditBody(f.item, issue.number))
    actions += [
        Duplicate(i.marker.item, i.number, keep)
        for i, keep in duplicates(observed, audit)
        if i.marker is not None
    ]
    if tracking_issue:
        entries = checklist_entries(findings, observed, audit, notes)
        if tracking_block == render_block(entries):
            actions.append(ChecklistUpToDate(tracking_issue))
        else:
            actions.append(UpdateChecklist(tracking_issue, entries))
    return Plan(tuple(actions))
