"""The Actions step summary of a sync: one table row per item, built from what the run did
(its results); a dry run's from what it would do (its plan)."""

from __future__ import annotations

from typing import Any

from ..records.catalog import Catalog
from ..render.issue import render_template
from ..run.actions import ChecklistUpToDate, EditBody, LinkPreset, StatusChange, UpdateChecklist
from ..tracking.subissues import AddSubIssue, SubIssueRemovedByHand


def planned_changes(actions: Any) -> dict[int, list[str]]:
    """What a plan would change, per item (a dry run's summary)."""
    changed: dict[int, list[str]] = {}
    for action in actions:
        if isinstance(action, EditBody):
            changed.setdefault(action.item, []).append("body updated")
        elif isinstance(action, LinkPreset):
            changed.setdefault(action.item, []).append("labelled")
        elif isinstance(action, StatusChange):
            changed.setdefault(action.item, []).append(f"status: {_state(action)}")
        elif isinstance(action, AddSubIssue):
            changed.setdefault(action.item, []).append("made a sub-issue")
        elif isinstance(action, SubIssueRemovedByHand):
            changed.setdefault(action.item, []).append("removed from the sub-issues by hand")
    return changed


def done_changes(outcome: Any) -> dict[int, list[str]]:
    """What a run did, per item, from its results: a label that failed is not "labelled".
    A status is named when its comment was posted or already there (a crashed run's)."""
    statuses = {a.item: _state(a) for a in outcome.plan.of(StatusChange)}
    words = {
        "EditBody": "body updated",
        "LinkPreset": "labelled",
        "AddSubIssue": "made a sub-issue",
    }
    changed: dict[int, list[str]] = {}
    for r in outcome.results:
        if r.item is None or r.status == "failed":
            continue
        if r.kind == "StatusChange":
            changed.setdefault(r.item, []).append(f"status: {statuses[r.item]}")
        elif r.kind in words and r.status == "done":
            changed.setdefault(r.item, []).append(words[r.kind])
    for fact in outcome.plan.of(SubIssueRemovedByHand):  # seen, not written
        changed.setdefault(fact.item, []).append("removed from the sub-issues by hand")
    return changed


def _state(action: StatusChange) -> str:
    return action.after.split(",")[0].replace("-", " ")


def summary_rows(catalog: Catalog, outcome: Any, *, dry_run: bool = False) -> list[dict[str, Any]]:
    changed = planned_changes(outcome.plan.actions) if dry_run else done_changes(outcome)
    by_number = {i.number: i for i in outcome.observed}
    rows = []
    for f in catalog.findings:
        issue = by_number.get(f.issue) if f.issue else outcome.issues.get(f.item)
        number = f.issue or (issue.number if issue else None)
        if issue is None:
            state = "not seen" if f.issue else "not filed"
        else:
            reason = (
                f" ({issue.state_reason.replace('_', ' ')})"
                if issue.state_reason and issue.state == "closed"
                else ""
            )
            state = issue.state + reason
        rows.append(
            {
                "item": f.item,
                "title": f.title,
                "issue": number,
                "state": state,
                "changed": ", ".join(changed.get(f.item, [])),
            }
        )
    return rows


def requests_lines(outcome: Any, *, dry_run: bool) -> list[str]:
    """What was done about the tracking issue's ticked requests (on a dry run: the plan)."""
    from ..tracking.requests import CarryOutRequest, DropRequest, RevertTick

    if dry_run:
        kinds = (CarryOutRequest, RevertTick, DropRequest)
        return [a.describe() for a in outcome.plan.actions if isinstance(a, kinds)]
    return [line for line in outcome.done if line.startswith("request in #")]


def step_summary(catalog: Catalog, outcome: Any, *, dry_run: bool) -> str:
    """The summary table; after ``--max-writes`` stopped the run (``outcome.stopped``), the
    plan is what is left, and the summary reads as a preview of it."""
    stopped = getattr(outcome, "stopped", None)
    dry_run = dry_run or stopped is not None
    updates = outcome.plan.of(UpdateChecklist)
    checklist_actions = [*updates, *outcome.plan.of(ChecklistUpToDate)]
    tracking = checklist_actions[0].issue if checklist_actions else None
    written = any(r.kind == "UpdateChecklist" and r.status == "done" for r in outcome.results)
    status = "checklist updated" if written else "checklist up to date"
    if dry_run and updates:
        status = "checklist would be updated"
    return render_template(
        catalog.root / "templates",
        "summary.md.j2",
        rows=summary_rows(catalog, outcome, dry_run=dry_run),
        checklist=tracking,
        checklist_status=status,
        warnings=outcome.warnings,
        dry_run=dry_run,
        stopped=stopped,
        requests=requests_lines(outcome, dry_run=dry_run),
    )
