"""The Actions step summary of a sync: one table row per item."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog
from .plan import EditBody, LinkPreset, UpdateChecklist
from .render import environment


def summary_rows(catalog: Catalog, outcome: Any) -> list[dict[str, Any]]:
    changed: dict[int, list[str]] = {}
    for action in outcome.plan.actions:
        if isinstance(action, EditBody):
            changed.setdefault(action.item, []).append("body updated")
        elif isinstance(action, LinkPreset):
            changed.setdefault(action.item, []).append("labelled")
    rows = []
    for f in catalog.findings:
        by_number = {i.number: i for i in outcome.observed}
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


def step_summary(catalog: Catalog, outcome: Any, *, dry_run: bool) -> str:
    updates = outcome.plan.of(UpdateChecklist)
    tracking = updates[0].issue if updates else None
    if tracking is None:
        for action in outcome.plan.actions:
            if type(action).__name__ == "ChecklistUpToDate":
                tracking = action.issue
    status = "checklist updated" if updates else "checklist up to date"
    if dry_run and updates:
        status = "checklist would be updated"
    template = environment(catalog.root / "templates").get_template("summary.md.j2")
    return template.render(
        rows=summary_rows(catalog, outcome),
        checklist=tracking,
        checklist_status=status,
        warnings=outcome.warnings,
        dry_run=dry_run,
    )
