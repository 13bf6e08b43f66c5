"""The one executor: carry out a complete plan, in order, each write once.

Nothing is written before the plan is complete (:mod:`artbot.run.commands` observes, plans,
then calls :func:`execute`). The dispatch is a ``match`` over :data:`artbot.run.actions.Write`
ending in ``assert_never``: a write added to the union without a case here fails mypy. Facts
in the plan (an issue that exists, a foreign copy) are not dispatched. Every write is counted
here against ``--max-writes`` before it is sent; every result goes through the run's
:class:`~artbot.report.results.Journal`, the one log path.

The run stops at the first write that fails (the error leaves as exit 1), except where a
failure is by design a warning: labelling a preset issue or the tracking issue, and the
sub-issue writes, which sit beside the checklist and never in its way. Stopping anywhere,
by a failure, ``--max-writes`` or a crash, is safe, because every write path survives it and
the next run's observe and plan pick up what is left:

- artbot's login is configured, never learnt while writing: a create whose author is not one
  of artbot's logins stops the run (exit 1) before anything else, so a misconfigured run
  files at most one issue and the next run, configured, finds it by its marker;
- issues are found by marker before anything is created, so a rerun never files twice; a
  create that fails is looked for before it counts as failed (a 502 after the write, a
  dropped connection: GitHub is the source of truth), and a POST is never sent twice blind;
- after creating, the list is read again and extra issues for an item (a retried POST that
  succeeded twice, or two runs at once) are closed as duplicates of the lowest number
  (:class:`~artbot.run.actions.CloseCopies`);
- the tracking issue's body is re-read right before it is written and the block is applied
  to that fresh body, with the ticks found there, so a human's edit made meanwhile is kept;
- an issue is artbot's only if its marker sits in the owned region and a login artbot
  writes as wrote it (:mod:`artbot.tracking.ownership`); anything else with a marker is
  reported and never written to or closed;
- the tracking issue is checked before the first write (it exists, is an issue, is not
  locked, its block is well formed, it is the audit's): a bad one stops the run with nothing
  written (:func:`artbot.run.observe.preflight`);
- only the artbot-owned region of a generated issue is ever rewritten;
- a fixed item is filed, then closed as completed; its body carries a hidden "filed closed"
  line outside the owned region, so a re-run after a crash between the two closes it, and an
  issue a human reopened (``state_reason: reopened``) is never closed again;
- a status change is commented on before the body's status table is updated, and the
  comment carries the status it states, so a re-run after a crash in between posts no second
  comment; with ``close_when_fixed``, the issue is closed right after that comment and before
  the body's status is updated, so a re-run closes it without a second comment;
- sub-issue writes come before the block write that records them, and the record holds only
  what succeeded, so after a crash the next sync reads the list and settles the rest;
- a ticked request is cleared by the block write after what it asked for, never before,
  and what it asks for is itself safe to repeat (filing finds by marker; a re-check comments
  once per status change).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from ..errors import ArtbotError, RemoteError, SubIssuesUnavailable
from ..records.catalog import Catalog
from ..records.marker import replace_owned_region
from ..records.models import ObservedIssue
from ..render.issue import RenderedIssue
from ..render.status_view import StatusView
from ..report.results import Journal, Result
from ..tracking.block import TrackingBlock, apply
from ..tracking.checklist import ChecklistEntry
from ..tracking.ownership import claim
from ..tracking.requests import Panel, panel
from ..tracking.subissues import AddSubIssue, MoveSubIssue, RemoveSubIssue, SubIssueRecord
from .actions import (
    FACTS,
    ChecklistUpToDate,
    CloseCopies,
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Comment,
    Create,
    CreateLabel,
    EditBody,
    LabelTracking,
    LinkPreset,
    Plan,
    StatusChange,
    UpdateChecklist,
    Write,
)
from .issues import canonical, duplicates, filed_body, with_filed
from .subissue_writes import (
    SubIssueProgress,
    add,
    add_filed,
    move_all,
    place_filed,
    remove,
    unavailable_warning,
)

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo

# Renders the block's text: (checklist lines, sub-issue record, Requests, identity) -> text.
RenderBlock = Callable[[Sequence[ChecklistEntry], SubIssueRecord | None, Panel, Sequence[str]], str]


class WriteBudgetSpent(ArtbotError):
    """The run made as many writes as it was allowed (``--max-writes``); nothing more was
    sent. As safe as a crash at that point: the next run does what is left."""

    exit_code = 0

    def __init__(self, limit: int):
        super().__init__(f"stopped after {limit} write(s) (--max-writes {limit})")
        self.limit = limit


@dataclass
class Execution:
    """What carrying out one plan needs, and what it finds out as it goes."""

    repo: Repo
    catalog: Catalog
    plan: Plan
    journal: Journal
    logins: tuple[str, ...]  # whose marked issues are artbot's
    render_block: RenderBlock
    rendered: dict[int, RenderedIssue]
    views: dict[int, StatusView | None]
    observed: list[ObservedIssue]
    progress: SubIssueProgress | None = None
    # The tracking issue's body and its block as observe read them: the write re-reads the
    # body, and parses it again only when someone edited it in between.
    tracking_body: str | None = None
    block: TrackingBlock | None = None
    tracking: int | None = None  # never a finding's issue, whatever it quotes
    limit: int | None = None  # --max-writes
    writes: int = 0
    issues: dict[int, ObservedIssue] = field(default_factory=dict)  # item -> its issue
    filed: dict[int, ObservedIssue] = field(default_factory=dict)  # item -> issue filed now
    checklist: str | None = None  # the block as written (or found already so)

    def spend(self) -> None:
        """Count one write against ``--max-writes``, before it is sent."""
        if self.limit is not None and self.writes >= self.limit:
            raise WriteBudgetSpent(self.limit)
        self.writes += 1

    def warn(self, line: str) -> None:
        self.journal.add(Result.failed(line))


def execute(ex: Execution) -> WriteBudgetSpent | None:
    """Carry out ``ex.plan``'s writes in order; returns why it stopped early, if it did
    (``--max-writes``), with the writes left in ``ex.plan`` from that point. A failure that
    is not a warning leaves as its exception."""
    ex.journal.plan(ex.plan.text())
    for at, action in enumerate(ex.plan.actions):
        if isinstance(action, FACTS):
            continue
        try:
            ex.journal.extend(carry_out(ex, action))
        except WriteBudgetSpent as stop:
            ex.plan = Plan(ex.plan.actions[at:], ex.plan.block, ex.plan.warnings)
            return stop
    return None


def carry_out(ex: Execution, action: Write) -> list[Result]:
    """One write of the plan: its results."""
    repo = ex.repo
    match action:
        case CreateLabel():
            ex.spend()
            repo.create_label(action.name, action.color, action.description)
            repo.cache.labels.add(action.name)
            return [Result.done(f"created label {action.name!r}", kind="CreateLabel")]
        case LabelTracking() | LinkPreset():
            return [_label(ex, action)]
        case Create():
            return _create(ex, action)
        case CloseCopies():
            return _close_copies(ex, action)
        case CloseFixed():
            ex.spend()
            repo.edit_issue(action.issue, state="closed", state_reason="completed")
            line = f"item {action.item}: closed #{action.issue} as completed ({action.fixed_in})"
            return [Result.done(line, action)]
        case CloseDuplicate():
            ex.spend()
            repo.edit_issue(action.issue, state="closed", state_reason="duplicate")
            line = f"item {action.item}: closed #{action.issue} as a duplicate of #{action.keep}"
            return [Result.done(line, action)]
        case StatusChange():
            if action.comment is None:
                line = f"item {action.item}: #{action.issue} already has this status comment"
                return [Result.skipped(line, action)]
            ex.spend()
            repo.comment(action.issue, action.comment)
            line = f"item {action.item}: commented on #{action.issue} (status)"
            return [Result.done(line, action)]
        case CloseWhenFixed():
            ex.spend()
            closed = repo.edit_issue(action.issue, state="closed", state_reason="completed")
            ex.issues[action.item] = closed
            ex.observed = [closed if i.number == closed.number else i for i in ex.observed]
            line = (
                f"item {action.item}: closed #{action.issue} as completed "
                f"(fixed in {action.fixed_in})"
            )
            return [Result.done(line, action)]
        case EditBody():
            fresh = repo.get_issue(action.issue, fresh=True)
            body = replace_owned_region(fresh.body, ex.rendered[action.item].body)
            if body == fresh.body:
                line = f"item {action.item}: #{action.issue} was already up to date"
                return [Result.skipped(line, action)]
            ex.spend()
            repo.edit_issue(action.issue, body=body)
            return [Result.done(f"item {action.item}: updated #{action.issue}", action)]
        case Comment():
            ex.spend()
            repo.comment(action.issue, action.body)
            return [Result.done(f"item {action.item}: commented on #{action.issue}", action)]
        case AddSubIssue() | RemoveSubIssue() | MoveSubIssue():
            return _sub_issue(ex, action)
        case UpdateChecklist():
            return [_write_block(ex, action.issue)]
        case ChecklistUpToDate():
            planned = ex.plan.block.record if ex.plan.block else None
            if ex.progress is None or ex.progress.record(planned) == planned:
                return []
            # A sub-issue write went otherwise than planned: record what did happen.
            return [_write_block(ex, action.issue)]
        case _:
            assert_never(action)


def _label(ex: Execution, action: LabelTracking | LinkPreset) -> Result:
    """Label the tracking issue or a preset issue; a failure is a result (and a warning),
    never the end of the run."""
    ex.spend()
    try:
        ex.repo.add_labels(action.issue, list(action.labels))
    except RemoteError as exc:
        line = (
            f"could not label tracking issue #{action.issue}: {exc}"
            if isinstance(action, LabelTracking)
            else f"item {action.item}: could not label #{action.issue}: {exc}"
        )
        return Result.failed(line, action)
    ex.repo.cache.labels |= set(action.labels)
    return Result.done(f"labelled #{action.issue} ({', '.join(action.labels)})", action)


def _create(ex: Execution, action: Create) -> list[Result]:
    """File the item's issue; a fixed item's is then closed as completed."""
    repo, audit, item = ex.repo, ex.catalog.audit, action.item
    issue = ex.rendered[item]
    body = filed_body(issue.body, ex.views.get(item))
    out: list[Result] = []
    ex.spend()
    try:
        created = repo.create_issue(issue.title, body, list(issue.labels))
    except RemoteError:
        # The create may have taken effect before the error (a 502 after the write, a dropped
        # connection). GitHub is the source of truth: look before deciding it failed.
        listed = repo.list_issues(list(audit.labels))
        ex.observed, _ = claim(listed, audit, ex.logins, ex.tracking)
        found = canonical(ex.observed, audit)
        if item not in found:
            raise
        created = found[item]
        line = f"item {item}: the create failed but had taken effect as #{created.number}"
        out.append(Result.done(line, kind="Create", item=item, issue=created.number))
    else:
        if created.author and created.author.casefold() not in {x.casefold() for x in ex.logins}:
            raise ArtbotError(
                f"item {item}: GitHub filed #{created.number} as @{created.author}, but artbot "
                f"is configured to write as {', '.join('@' + x for x in ex.logins)}: set "
                f"--author {created.author} (or login in findings/audit.yaml); the next run "
                "finds the issue by its marker"
            )
        ex.observed.append(created)
        line = f"item {item}: filed #{created.number} {created.html_url}"
        out.append(Result.done(line, kind="Create", item=item, issue=created.number))
    repo.cache.labels |= set(issue.labels)
    if action.fixed_in and created.state == "open":
        ex.spend()
        created = repo.edit_issue(created.number, state="closed", state_reason="completed")
        ex.observed = [created if i.number == created.number else i for i in ex.observed]
        line = f"item {item}: closed #{created.number} as completed ({action.fixed_in})"
        out.append(Result.done(line, kind="CloseFixed", item=item, issue=created.number))
    ex.issues[item] = ex.filed[item] = created
    return out


def _close_copies(ex: Execution, action: CloseCopies) -> list[Result]:
    """Read the list again (the issues just filed are kept too, in case the list does not
    show them yet) and close any second issue of an item just filed."""
    audit = ex.catalog.audit
    listed = ex.repo.list_issues(list(audit.labels))
    listed, _ = claim(listed, audit, ex.logins, ex.tracking)
    numbers = {i.number for i in listed}
    ex.observed = [*listed, *(i for i in ex.observed if i.number not in numbers)]
    out = []
    for extra, keep in duplicates(ex.observed, audit):
        if extra.marker is None or extra.marker.item not in action.items:
            continue
        ex.spend()
        closed = ex.repo.edit_issue(extra.number, state="closed", state_reason="duplicate")
        ex.observed = [closed if i.number == closed.number else i for i in ex.observed]
        line = f"item {extra.marker.item}: closed #{extra.number} as a duplicate of #{keep}"
        out.append(Result.done(line, CloseDuplicate(extra.marker.item, extra.number, keep)))
    kept = canonical(ex.observed, audit)
    for item in action.items:
        if item in kept:
            ex.issues[item] = ex.filed[item] = kept[item]
    return out


def _sub_issue(ex: Execution, action: AddSubIssue | RemoveSubIssue | MoveSubIssue) -> list[Any]:
    """One sub-issue write; a failure is a warning, and the record says what happened. Where
    GitHub has no sub-issues (a 404), that is said once and the rest are left."""
    progress = ex.progress
    if progress is None or progress.unavailable:
        return []
    try:
        if isinstance(action, MoveSubIssue):
            return move_all(ex.repo, progress, ex.warn, ex.spend)
        ex.spend()
        if isinstance(action, RemoveSubIssue):
            return [remove(ex.repo, progress, action, ex.warn)]
        if action.issue is None:  # an issue this run files
            issue = ex.filed.get(action.item)
            if issue is None:
                return []
            added = add_filed(ex.repo, progress, action.item, issue, ex.warn)
            placed = place_filed(ex.repo, progress, action.item, issue.number, ex.warn, ex.spend)
            return [added, *placed]
        return [add(ex.repo, progress, action, ex.warn)]
    except SubIssuesUnavailable:
        progress.unavailable = True
        ex.warn(unavailable_warning(progress.parent))
        return []


def _write_block(ex: Execution, number: int) -> Result:
    """Write the tracking issue's block, once, at the end. Re-read right before writing and
    applied to what is there now: GitHub has no compare-and-swap for issue bodies, so this
    keeps the window for losing a human's edit as short as one request (an unchanged body
    comes back as a free 304)."""
    planned = ex.plan.block
    assert planned is not None
    fresh = ex.repo.get_issue(number, fresh=True)
    same = ex.block is not None and fresh.body == ex.tracking_body
    now = ex.block if same and ex.block is not None else TrackingBlock.parse(fresh.body)
    entries = with_filed(planned.entries, ex.filed)
    if planned.asked is not None:
        requests = planned.asked.panel_for(
            entries, now.ticked, now.note, done=planned.done, declined=now.declined
        )
    else:
        requests = panel(entries, now.ticked, now.note, now.declined)
    record = ex.progress.record(now.record) if ex.progress else now.record
    logins = now.with_logins(planned.logins)
    ex.checklist = ex.render_block(entries, record, requests, logins)
    body = apply(fresh.body, ex.checklist)
    about = {"kind": "UpdateChecklist", "issue": number}
    if body == fresh.body:
        return Result.skipped(f"the checklist in #{number} is already as planned", **about)
    ex.spend()
    ex.repo.edit_issue(number, body=body)
    return Result.done(f"updated the checklist in #{number}", **about)
