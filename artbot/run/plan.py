"""The one planner: what the catalog wants (rendered) against what GitHub holds (the run's
:class:`~artbot.run.observe.Snapshot`) -> the complete list of writes. Pure: no I/O, no
rendering, no callback.

A run's :class:`Scope` says what it is for: the items to file (``open``'s; a ticked request's
are read from the snapshot), and whether to keep the rest in step (``sync``). :func:`plan_run`
runs the small planners in the order their writes are carried out (docs/design.md, "plan");
once the block is rendered, :func:`plan_block` adds its re-read and write.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..records.marker import owned_region
from ..records.models import Audit, Finding
from ..records.observed import ObservedIssue
from ..render.issue import RenderedIssue
from ..render.status_view import StatusView, stated_status
from ..tracking.block import TrackingBlock
from ..tracking.checklist import ChecklistEntry
from ..tracking.ownership import NO_TRACKING
from ..tracking.requests import Request
from ..tracking.subissues import (
    REF,
    WRITES,
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    SubIssueRecord,
    SubIssueStart,
    moves,
)
from .actions import (
    FACTS,
    Action,
    BlockPlan,
    ChecklistUpToDate,
    Claims,
    CloseCopies,
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Create,
    CreateLabel,
    Duplicate,
    EditBody,
    Exists,
    LabelTracking,
    Plan,
    Preset,
    ReadTracking,
    StatusChange,
    UpdateChecklist,
)
from .blockwrite import BlockWrite, ref
from .issues import (
    canonical,
    checklist_entries,
    close_was_lost,
    closes,
    duplicates,
    filed_as,
    filed_body,
    preset_links,
    with_refs,
)
from .observe import Scope, Snapshot
from .status_comments import status_comment, verification_comments
from .subissue_writes import plan_step, unavailable_warning, wanted_sub_issues


@dataclass(frozen=True)
class Want:
    """What the run wants, all of it rendered before planning."""

    scope: Scope
    audit: Audit
    findings: tuple[Finding, ...]  # every item of the catalog (the checklist lists them all)
    rendered: Mapping[int, RenderedIssue]
    views: Mapping[int, StatusView | None]
    status_texts: Mapping[int, str] | None = None  # the comment of each status change
    notes: Mapping[int, str] | None = None  # verification notes for the checklist
    logins: tuple[str, ...] = ()  # the logins configured for this run (the record keeps them)
    replace_parent: bool = False


@dataclass
class _Parts:
    """The plan as the planners build it, in order."""

    actions: list[Action]
    warnings: list[str]
    labels: set[str]  # labels known to exist (and those this plan creates)

    def new_labels(self, audit: Audit, names: Sequence[str]) -> list[Action]:
        out: list[Action] = []
        for name in dict.fromkeys(names):
            if name not in self.labels:
                self.labels.add(name)
                style = audit.label_definitions.get(name)
                out.append(CreateLabel(name, *((style.color, style.description) if style else ())))
        return out


def plan_run(want: Want, snap: Snapshot) -> Plan:
    """Every write of the run but the block's, in the order it is carried out, the facts
    found, and how the block reads once they are done."""
    parts = _Parts(list(snap.foreign), [], set(snap.labels))
    if want.scope.in_step:
        _labelling(want, snap, parts)
    creates = _filing(want, snap, parts)
    # The issues as they will read once the closes so far are done (the checklist ticks them).
    shut = {a.issue for a in parts.actions if isinstance(a, CloseFixed) and a.issue is not None}
    after = [
        replace(i, state="closed", state_reason="completed") if i.number in shut else i
        for i in snap.issues
    ]
    if want.scope.in_step:
        after = _keep_in_step(want, snap, parts, after, {c.item for c in creates})
    block = None
    if snap.tracking is not None:
        block = _block(want, snap, parts, after, creates)
    if want.scope.in_step and snap.verified is not None:
        found = canonical(snap.issues, want.audit)
        results = [r for r in snap.verified[1] if want.views.get(r.item) is None]
        comments = {n: list(bodies) for n, bodies in snap.comments.items()}
        parts.actions += verification_comments(comments, found, snap.verified[0], results)
    claims = Claims(want.audit, snap.logins, snap.number)
    return Plan(tuple(parts.actions), block, tuple(parts.warnings), claims)


def _labelling(want: Want, snap: Snapshot, parts: _Parts) -> None:
    """The tracking issue's labels (once) and the preset issues' (so the one list sees them)."""
    audit, tracking = want.audit, snap.tracking
    if tracking is not None and audit.tracking_label:
        wanted = (*audit.labels, audit.tracking_label)
        missing = tuple(lbl for lbl in wanted if lbl not in tracking.labels)
        if missing:
            parts.actions += [
                *parts.new_labels(audit, missing),
                LabelTracking(tracking.number, missing),
            ]
    parts.actions += preset_links(want.findings, list(snap.issues), audit)


def _filing(want: Want, snap: Snapshot, parts: _Parts) -> list[Create]:
    """The items to file: ``open``'s, or what a ticked request asks for; each once."""
    audit, asked = want.audit, snap.asked
    found = canonical(snap.issues, audit)
    by_item = {f.item: f for f in want.findings}
    files = want.scope.files + tuple(asked.files() if asked else ())
    # A follow-up a maintainer declined (its decline honoured in the block) is never filed.
    no = snap.block.declined if snap.block else frozenset()
    parts.warnings += [
        f"item {i}: declined in the tracking issue; not filed" for i in files if i in no
    ]
    files = tuple(i for i in files if i not in no)
    creates: list[Create] = []
    facts: list[Action] = []
    for item in files:
        f, view = by_item[item], want.views.get(item)
        if f.issue:
            facts.append(Preset(item, f.issue))
        elif item in found:
            issue = found[item]
            facts.append(Exists(item, issue.number, issue.state))
            if view is not None and view.fixed_in and close_was_lost(issue):
                facts.append(CloseFixed(item, issue.number, view.fixed_in))
        elif item in want.rendered:  # not rendered: over GitHub's limit, reported and skipped
            r = want.rendered[item]
            body = filed_body(r.body, view)
            creates.append(Create(item, r.title, r.labels, body, **filed_as(view)))
    labels = [lbl for c in creates for lbl in c.labels]
    parts.actions += [*parts.new_labels(audit, labels), *facts]
    for c in creates:  # every write one step: a fixed item's close is its own, right after
        parts.actions += [c, *([CloseFixed(c.item, None, c.fixed_in)] if c.fixed_in else [])]
    if not want.scope.in_step:
        parts.actions += [
            CloseDuplicate(i.marker.item, i.number, keep)
            for i, keep in duplicates(snap.issues, audit)
            if i.marker is not None and i.marker.item in files
        ]
    if creates:
        parts.actions.append(CloseCopies(tuple(c.item for c in creates)))
    return creates


def _keep_in_step(
    want: Want, snap: Snapshot, parts: _Parts, after: list[ObservedIssue], filing: set[int]
) -> list[ObservedIssue]:
    """Each item's status change (one comment, then the edit), close when fixed (only with
    ``audit.close_when_fixed``, right after that comment; never a reopen), and the owned
    region; the duplicates (reported); what the ticked requests come to. Returns the issues
    as they will read once the closes are done."""
    found = canonical(snap.issues, want.audit)
    actions: list[Action] = []
    closing: dict[int, ObservedIssue] = {}
    for f in want.findings:
        issue = found.get(f.item)
        if issue is None or f.issue or f.item in filing or f.item not in want.rendered:
            continue  # (not rendered: its body is over GitHub's limit, reported and skipped)
        view = want.views.get(f.item)
        region = owned_region(issue.body)
        before = stated_status(region, f.item)
        if view is not None and before != view.state:
            change = StatusChange(f.item, issue.number, before, view.state)
            text = (want.status_texts or {}).get(f.item, "")
            said = status_comment(change, snap.comments.get(issue.number, ()), text)
            actions.append(replace(change, comment=said.body if said else None))
            if closes(want.audit, view, issue):
                assert view.fixed_in is not None
                actions.append(CloseWhenFixed(f.item, issue.number, view.fixed_in))
                closing[issue.number] = replace(issue, state="closed", state_reason="completed")
        wanted = owned_region(want.rendered[f.item].body)
        if region != wanted and snap.tracking is not None:  # no tracking: no back-link to give
            actions.append(EditBody(f.item, issue.number, want.rendered[f.item].body))
    if snap.tracking is None:
        parts.warnings.append(NO_TRACKING)
    actions += [
        Duplicate(i.marker.item, i.number, keep)
        for i, keep in duplicates(snap.issues, want.audit)
        if i.marker is not None
    ]
    actions += snap.asked.actions() if snap.asked else []
    parts.actions += actions
    return [closing.get(i.number, i) for i in after]


def _block(
    want: Want,
    snap: Snapshot,
    parts: _Parts,
    after: Sequence[ObservedIssue],
    creates: Sequence[Create],
) -> BlockPlan:
    """The sub-issue writes, then how the block reads once every write before it is done."""
    tracking, asked = snap.tracking, snap.asked
    assert tracking is not None
    entries = checklist_entries(want.findings, after, want.audit, want.notes, want.views)
    record = _sub_issues(want, snap, parts, entries, creates)
    done: list[Request] = [Request("file", c.item) for c in creates]
    done += [Request("recheck")] if snap.rechecked else []
    done += [Request("decline", n) for n in (asked.declines() if asked else ())]
    logins = snap.block.with_logins(want.logins) if snap.block else want.logins
    return BlockPlan(
        with_refs(entries, creates),
        tuple(c.item for c in creates),
        asked,
        tuple(done),
        record,
        logins,
        _start(snap, record, in_step=want.scope.in_step),
    )


def _start(snap: Snapshot, record: SubIssueRecord | None, *, in_step: bool) -> SubIssueStart:
    """What the record written after the run is settled from (the writes as they turn out)."""
    assert snap.tracking is not None
    listed = snap.sub_issues
    if isinstance(listed, tuple):
        order = tuple(i.number for i in listed)
    elif in_step and listed is None and record is not None:  # not read: it is as recorded
        order = tuple(n for n in record.added if n < REF)
    else:
        order = ()
    old = snap.block.record if snap.block else None
    return SubIssueStart(snap.tracking.number, record, old, order, in_step)


def _sub_issues(
    want: Want,
    snap: Snapshot,
    parts: _Parts,
    entries: Sequence[ChecklistEntry],
    creates: Sequence[Create],
) -> SubIssueRecord | None:
    """The sub-issue writes (``sync`` keeps them in step; both add what they file) and the
    record as planned."""
    tracking = snap.tracking
    assert tracking is not None
    record = snap.block.record if snap.block else None
    if want.scope.in_step:
        subs = plan_step(
            tracking,
            wanted_sub_issues(entries),
            record,
            snap.sub_issues,
            replace_parent=want.replace_parent,
        )
        parts.actions += subs.plan.actions
        record = subs.expected
        if not subs.available:
            parts.warnings.append(subs.skipped or unavailable_warning(subs.parent))
    if creates and tracking.sub_issues is not None:
        parts.actions += [AddSubIssue(c.item, None, tracking.number) for c in creates]
        # The issues filed are recorded as added: GitHub appends each (open); sync moves them
        # into item order among artbot's.
        order = [*(record.added if record else ()), *(ref(c.item) for c in creates)]
        record = (record or SubIssueRecord()).with_added([ref(c.item) for c in creates])
        if want.scope.in_step and not any(isinstance(a, NoSubIssues) for a in parts.actions):
            item_of = {e.issue: e.item for e in entries if e.issue is not None}
            item_of |= {ref(c.item): c.item for c in creates}
            desired = sorted(order, key=lambda n: item_of.get(n, 0))
            parts.actions += [
                MoveSubIssue(item_of.get(n, 0), n, tracking.number, after, before)
                for n, after, before in moves(order, desired)
            ]
            record = replace(record, added=tuple(desired))
    elif creates and not want.scope.in_step:
        parts.actions.append(NoSubIssues(tracking.number))
        parts.warnings.append(unavailable_warning(tracking.number))
    return record


def plan_block(plan: Plan, text: str | None, observed: TrackingBlock | None) -> Plan:
    """``plan`` with the block's write added at its end, ``text`` being the block as rendered
    from ``plan.block``: up to date when it reads as the block does now and no write before
    it can change it (no issue filed, no sub-issue write); else the re-read of the tracking
    issue (the sub-issue add's answer when that comes right before), then the write."""
    block = plan.block
    if block is None or text is None or plan.claims is None or plan.claims.tracking is None:
        return plan
    number = plan.claims.tracking
    now = observed.text if observed else None
    sub_writes = any(isinstance(a, WRITES) for a in plan.actions)
    if text == now and not block.filed and not sub_writes:
        return replace(plan, actions=(*plan.actions, ChecklistUpToDate(number)))
    cleared = set(block.done)
    if block.asked is not None:
        cleared |= {*block.asked.revert, *block.asked.drop}
    items = tuple((e.issue, e.item) for e in block.entries if e.issue is not None)
    write = BlockWrite(text, now, block.filed, frozenset(cleared), items, block.sub_issues)
    last = next((a for a in reversed(plan.actions) if not _is_fact(a)), None)
    answered = isinstance(last, AddSubIssue) and last.issue is None
    steps = (ReadTracking(number, answered), UpdateChecklist(number, write))
    return replace(plan, actions=(*plan.actions, *steps))


def _is_fact(action: Action) -> bool:
    return isinstance(action, FACTS)
