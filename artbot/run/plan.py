"""The one planner: what the catalog wants (rendered) against what GitHub holds (the run's
:class:`~artbot.run.observe.Snapshot`) -> the complete list of writes. Pure: no I/O, no
rendering, no callback; called once per run.

``open`` and ``sync`` are the same plan with different scope. ``open`` files the items asked
for (:class:`Create`, each once: an item's issue is found by marker first), closes what a
crashed run filed for a fixed item and left open, and closes duplicates of those items.
``sync`` files what a ticked request asks for the same way, and keeps the rest in step:
labels, status comments, the owned region of each body, the sub-issues, verification
comments. Both end with the one write of the tracking issue's block (:class:`BlockPlan`
says how it reads once the writes before it are done).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..records.marker import owned_region
from ..records.models import Audit, Finding, ObservedIssue
from ..render.issue import RenderedIssue
from ..render.status_view import StatusView, stated_status
from ..tracking.ownership import NO_TRACKING
from ..tracking.requests import Request
from ..tracking.subissues import AddSubIssue, NoSubIssues
from .actions import (
    Action,
    BlockPlan,
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
    StatusChange,
    UpdateChecklist,
)
from .issues import (
    canonical,
    checklist_entries,
    close_was_lost,
    closes,
    duplicates,
    filed_as,
    preset_links,
)
from .observe import Snapshot
from .status_comments import status_comment, verification_comments
from .subissue_writes import plan_step, unavailable_warning, wanted_sub_issues


@dataclass(frozen=True)
class Want:
    """What the run wants, all of it rendered before planning."""

    command: Literal["open", "sync"]
    audit: Audit
    findings: tuple[Finding, ...]  # every item of the catalog (the checklist lists them all)
    rendered: Mapping[int, RenderedIssue]
    views: Mapping[int, StatusView | None]
    items: tuple[int, ...] = ()  # open: the items asked for
    status_texts: Mapping[int, str] | None = None  # the comment of each status change
    notes: Mapping[int, str] | None = None  # verification notes for the checklist
    logins: tuple[str, ...] = ()  # artbot's identity, as established
    replace_parent: bool = False


def plan_run(want: Want, snap: Snapshot) -> Plan:
    """Every write of the run, in the order it is carried out, and the facts found."""
    audit, sync = want.audit, want.command == "sync"
    issues = list(snap.issues)
    found = canonical(issues, audit)
    by_item = {f.item: f for f in want.findings}
    warnings: list[str] = []
    actions: list[Action] = list(snap.foreign)
    labels = set(snap.labels)

    def new_labels(names: Sequence[str]) -> list[Action]:
        out: list[Action] = []
        for name in dict.fromkeys(names):
            if name not in labels:
                labels.add(name)
                style = audit.label_definitions.get(name)
                out.append(CreateLabel(name, *((style.color, style.description) if style else ())))
        return out

    if sync and snap.tracking is not None and audit.tracking_label:
        wanted = (*audit.labels, audit.tracking_label)
        missing = tuple(lbl for lbl in wanted if lbl not in snap.tracking.labels)
        if missing:
            actions += [*new_labels(missing), LabelTracking(snap.tracking.number, missing)]
    if sync:
        actions += preset_links(want.findings, issues, audit)

    # Filing: the items open was asked for, or a ticked request asks for.
    asked = snap.asked
    files = want.items if not sync else tuple(asked.files() if asked else ())
    # A follow-up a maintainer declined (its decline honoured in the block) is never filed.
    no = snap.block.declined if snap.block else frozenset()
    warnings += [f"item {i}: declined in the tracking issue; not filed" for i in files if i in no]
    files = tuple(i for i in files if i not in no)
    creates: list[Create] = []
    filing: list[Action] = []
    for item in files:
        f, view = by_item[item], want.views.get(item)
        if f.issue:
            filing.append(Preset(item, f.issue))
        elif item in found:
            issue = found[item]
            filing.append(Exists(item, issue.number, issue.state))
            if view is not None and view.fixed_in and close_was_lost(issue):
                filing.append(CloseFixed(item, issue.number, view.fixed_in))
        else:
            r = want.rendered[item]
            creates.append(Create(item, r.title, r.labels, **filed_as(view)))
    actions += [*new_labels([lbl for c in creates for lbl in c.labels]), *filing, *creates]
    if not sync:
        actions += [
            CloseDuplicate(i.marker.item, i.number, keep)
            for i, keep in duplicates(issues, audit)
            if i.marker is not None and i.marker.item in files
        ]
    if creates:
        actions.append(CloseCopies(tuple(c.item for c in creates)))

    # The issues as they will read once the closes above are done (the checklist ticks them).
    shut = {a.issue for a in actions if isinstance(a, CloseFixed)}
    after = [
        replace(i, state="closed", state_reason="completed") if i.number in shut else i
        for i in issues
    ]
    # Keeping in step (sync): status comments, closing what is fixed, the owned regions.
    if sync:
        edits, after = _in_step(want, found, after, snap.comments, {c.item for c in creates})
        if snap.tracking is None:
            edits = [a for a in edits if not isinstance(a, EditBody)]  # no back-link to give
            warnings.append(NO_TRACKING)
        actions += edits
        actions += [
            Duplicate(i.marker.item, i.number, keep)
            for i, keep in duplicates(issues, audit)
            if i.marker is not None
        ]
        actions += asked.actions() if asked else []

    tracking = snap.tracking
    block = None
    if tracking is not None:
        entries = checklist_entries(want.findings, after, audit, want.notes, want.views)
        record = snap.block.record if snap.block else None
        if sync:
            subs = plan_step(
                tracking,
                wanted_sub_issues(entries),
                record,
                snap.sub_issues,
                replace_parent=want.replace_parent,
            )
            actions += subs.plan.actions
            record = subs.expected
            if not subs.available:
                warnings.append(subs.skipped or unavailable_warning(subs.parent))
        if creates and tracking.sub_issues is not None:
            actions += [AddSubIssue(c.item, None, tracking.number) for c in creates]
        elif creates and not sync:
            actions.append(NoSubIssues(tracking.number))
            warnings.append(unavailable_warning(tracking.number))
    if sync and snap.verified is not None:
        results = [r for r in snap.verified[1] if want.views.get(r.item) is None]
        comments = {n: list(bodies) for n, bodies in snap.comments.items()}
        actions += verification_comments(comments, found, snap.verified[0], results)
    if tracking is not None:
        done: list[Request] = [Request("file", c.item) for c in creates]
        done += [Request("recheck")] if snap.rechecked else []
        done += [Request("decline", n) for n in (asked.declines() if asked else ())]
        logins = snap.block.with_logins(want.logins) if snap.block else want.logins
        block = BlockPlan(
            entries,
            tuple(c.item for c in creates),
            asked,
            tuple(done),
            record,
            logins,
        )
        actions.append(UpdateChecklist(tracking.number, entries))
    return Plan(tuple(actions), block, tuple(warnings))


def _in_step(
    want: Want,
    found: Mapping[int, ObservedIssue],
    issues: Sequence[ObservedIssue],
    comments: Mapping[int, Sequence[str]],
    filing: set[int],
) -> tuple[list[Action], list[ObservedIssue]]:
    """Each item's status change (one comment, then the edit), close when fixed, and the
    owned region; and the issues as they will read once the closes are done.

    Sync never reopens, and closes only with ``audit.close_when_fixed``: a status change to
    "every claim fixed" then closes the open issue artbot filed, right after the change's
    one comment (:class:`CloseWhenFixed`)."""
    actions: list[Action] = []
    closing: dict[int, ObservedIssue] = {}
    for f in want.findings:
        issue = found.get(f.item)
        if issue is None or f.issue or f.item in filing:
            continue
        view = want.views.get(f.item)
        region = owned_region(issue.body)
        before = stated_status(region, f.item)
        if view is not None and before != view.state:
            change = StatusChange(f.item, issue.number, before, view.state)
            text = (want.status_texts or {}).get(f.item, "")
            said = status_comment(change, comments.get(issue.number, ()), text)
            actions.append(replace(change, comment=said.body if said else None))
            if closes(want.audit, view, issue):
                assert view.fixed_in is not None
                actions.append(CloseWhenFixed(f.item, issue.number, view.fixed_in))
                closing[issue.number] = replace(issue, state="closed", state_reason="completed")
        if region != owned_region(want.rendered[f.item].body):
            actions.append(EditBody(f.item, issue.number))
    return actions, [closing.get(i.number, i) for i in issues]


def up_to_date(plan: Plan, text: str | None, rendered: str | None) -> Plan:
    """``plan`` with its checklist write marked up to date when the block, rendered before
    the run writes (``rendered``; None when it cannot be: an issue is filed first), reads as
    the block does now (``text``)."""
    from .actions import ChecklistUpToDate

    if rendered is None or rendered != text:
        return plan
    actions = tuple(
        ChecklistUpToDate(a.issue) if isinstance(a, UpdateChecklist) else a for a in plan.actions
    )
    return replace(plan, actions=actions)
