"""Carry out a ``sync`` plan, one action at a time, each returning what it did.

The dispatch is a ``match`` over :data:`artbot.run.plan.Action` ending in ``assert_never``: an
action class added to the union without a case here fails mypy, instead of doing nothing at
run time. Actions that only report (an issue that exists, a foreign copy, a sub-issue fact)
have a case that returns nothing; those ``sync`` never plans raise. Every write's result goes
through the run's :class:`artbot.run.results.Journal`, the one log path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, assert_never

from ..catalog import Catalog
from ..github.repo import Repo
from ..models import ObservedIssue
from ..render import RenderedIssue, render_checklist
from ..status.view import StatusView
from ..tracking.checklist import ChecklistEntry, apply_block, read_block
from ..tracking.marker import replace_owned_region
from ..tracking.ownership import Foreign, recorded_logins, with_identity
from ..tracking.requests import CarryOutRequest, DropRequest, RevertTick, note_in, panel, ticked
from ..tracking.subissues import (
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    RemoveSubIssue,
    SubIssueHasParent,
    SubIssueRecord,
    SubIssueRemovedByHand,
    SubIssuesFull,
    SubIssuesUpToDate,
)
from .labels import label_issue
from .plan import (
    Action,
    ChecklistUpToDate,
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Comment,
    Create,
    Duplicate,
    EditBody,
    Exists,
    LabelTracking,
    LinkPreset,
    Preset,
    StatusChange,
    UpdateChecklist,
    checklist_entries,
)
from .requests_step import PanelEdit
from .results import Journal, Result
from .status_comments import carry_out_status_change, close_fixed
from .subissue_writes import SubIssueStep, carry_out

# The sub-issue record a checklist write keeps: from the one the block holds now.
RecordEdit = Callable[[SubIssueRecord | None], SubIssueRecord | None]


def write_checklist(
    repo: Repo,
    catalog: Catalog,
    number: int,
    entries: Sequence[ChecklistEntry],
    sub_issues: RecordEdit | None = None,
    requests: PanelEdit | None = None,
    logins: Sequence[str] = (),
) -> tuple[Result, str]:
    """Write the checklist; ``sub_issues`` turns the sub-issue record the block holds now
    into the one to write (None: keep it as it is), ``requests`` renders the Requests list
    over the block there now (None: keep its ticks and note); ``logins``, artbot's identity,
    are added to the one the block records. Returns the result and the block."""
    # Re-read right before writing and apply the edit to what is there now: GitHub has no
    # compare-and-swap for issue bodies, so this keeps the window for losing a human's edit
    # as short as one request. (Unchanged bodies come back as a free 304.)
    fresh = repo.get_issue(number, fresh=True)
    record = SubIssueRecord.find(read_block(fresh.body))
    record = sub_issues(record) if sub_issues else record
    old = read_block(fresh.body)
    requests = requests or (lambda b, e: panel(e, ticked(b), note_in(b)))
    block = render_checklist(
        entries, catalog.audit, catalog.root / "templates", record, requests(old, entries)
    )
    block = with_identity(block, (*recorded_logins(old), *logins))
    new_body = apply_block(fresh.body, block)
    about = {"kind": "UpdateChecklist", "issue": number}
    if new_body == fresh.body:
        return Result.skipped(f"the checklist in #{number} is already as planned", **about), block
    repo.edit_issue(number, body=new_body)
    return Result.done(f"updated the checklist in #{number}", **about), block


@dataclass
class SyncRun:
    """What carrying out one ``sync`` plan needs, and the sub-issue record as it turns out."""

    repo: Repo
    catalog: Catalog
    rendered: dict[int, RenderedIssue]
    views: dict[int, StatusView | None]
    observed: list[ObservedIssue]
    issues: dict[int, ObservedIssue]
    notes: Any
    subs: SubIssueStep | None
    record: SubIssueRecord | None
    journal: Journal
    closing: set[int] = field(default_factory=set)  # items close_when_fixed closes
    requests: PanelEdit | None = None  # how the checklist write renders the Requests list
    logins: Sequence[str] = ()  # artbot's identity, recorded in the checklist block
    checklist: str | None = None

    def keep_record(self) -> RecordEdit:
        """Write the record as it turned out, whatever the block holds now."""
        record = self.record
        return lambda _: record


def carry_out_sync(run: SyncRun, actions: Sequence[Action]) -> None:
    """Carry out ``actions`` in order; the sub-issue writes just before the checklist write,
    which records what happened."""
    journal = run.journal
    first_sub = run.subs.plan.actions[0] if run.subs and run.subs.plan.actions else None
    for action in actions:
        if run.subs is not None and first_sub is not None and action is first_sub:
            run.record = carry_out(
                run.repo,
                run.subs,
                run.observed,
                lambda w: journal.add(Result.failed(w)),
                journal.add,
            )
        journal.extend(carry_out_action(run, action))


def carry_out_action(run: SyncRun, action: Action) -> list[Result]:
    """One action of a ``sync`` plan: its results (none for an action that only reports)."""
    repo, catalog = run.repo, run.catalog
    match action:
        case LabelTracking() | LinkPreset():
            return label_issue(repo, run.observed, action, catalog)
        case StatusChange():
            view = run.views[action.item]
            assert view is not None
            said: list[Result] = []
            carry_out_status_change(
                repo,
                catalog,
                action,
                view,
                run.issues[action.item],
                closing=action.item in run.closing,
                done=lambda line: said.append(Result.done(line, action)),
            )
            line = f"item {action.item}: #{action.issue} already has this status comment"
            return said or [Result.skipped(line, action)]
        case CloseWhenFixed():
            closed: list[Result] = []
            issue = close_fixed(repo, action, lambda line: closed.append(Result.done(line, action)))
            run.issues[action.item] = issue
            run.observed = [issue if i.number == issue.number else i for i in run.observed]
            return closed
        case EditBody():
            fresh = repo.get_issue(action.issue, fresh=True)
            body = replace_owned_region(fresh.body, run.rendered[action.item].body)
            if body == fresh.body:
                line = f"item {action.item}: #{action.issue} was already up to date"
                return [Result.skipped(line, action)]
            repo.edit_issue(action.issue, body=body)
            return [Result.done(f"item {action.item}: updated #{action.issue}", action)]
        case UpdateChecklist():
            return [_checklist(run, action.issue, action.entries)]
        case ChecklistUpToDate():
            if run.subs is None or run.record == run.subs.expected:
                return []
            # A sub-issue write went otherwise than planned: record what did happen.
            entries = checklist_entries(
                catalog.findings, run.observed, catalog.audit, run.notes, run.views
            )
            return [_checklist(run, action.issue, entries)]
        case Comment():
            repo.comment(action.issue, action.body)
            return [Result.done(f"item {action.item}: commented on #{action.issue}", action)]
        case AddSubIssue() | MoveSubIssue() | RemoveSubIssue():
            return []  # carried out together, by carry_out_sync, before the checklist write
        case (
            Exists()
            | Preset()
            | Duplicate()
            | Foreign()
            | SubIssueRemovedByHand()
            | SubIssueHasParent()
            | SubIssuesFull()
            | SubIssuesUpToDate()
            | NoSubIssues()
        ):
            return []  # reported in the plan; nothing to write
        case CarryOutRequest() | RevertTick() | DropRequest():
            return []  # carried out before planning (apply_panel); the checklist write records it
        case Create() | CloseFixed() | CloseDuplicate():
            raise AssertionError(f"sync never carries out {action.describe()!r}")
        case _:
            assert_never(action)


def _checklist(run: SyncRun, number: int, entries: Sequence[ChecklistEntry]) -> Result:
    result, run.checklist = write_checklist(
        run.repo, run.catalog, number, entries, run.keep_record(), run.requests, run.logins
    )
    return result
