"""The one executor: send a complete plan, in order, each write once (docs/design.md, "send").

The dispatch is a ``match`` over :data:`artbot.run.actions.Write` ending in ``assert_never``.
The run stops at the first write that fails (exit 1), except labelling and the sub-issue
writes, which only warn. Stopping anywhere, by a failure, ``--max-writes`` or a crash, is
safe, because every write path survives it and the next run's observe and plan pick up what
is left:

- artbot's login is configured, never learnt while writing: a create whose author is not one
  of artbot's logins stops the run (exit 1) before anything else, so a misconfigured run
  files at most one issue and the next run, configured, finds it by its marker;
- issues are found by marker before anything is created, so a rerun never files twice; a
  create that fails is looked for before it counts as failed (a 502 after the write, a
  dropped connection: GitHub is the source of truth), and a POST is never sent twice blind;
- after creating, the list is read again and extra issues for an item (a retried POST that
  succeeded twice, or two runs at once) are closed as duplicates of the lowest number
  (:class:`~artbot.run.actions.CloseCopies`);
- the tracking issue's body is re-read right before it is written (a named step of the plan,
  :class:`~artbot.run.actions.ReadTracking`: the answer of the sub-issue add right before it
  when there is one) and the planned block is merged into that fresh body with the ticks
  found there (:func:`artbot.run.blockwrite.merge`), so a human's edit made meanwhile is kept;
- an issue is artbot's only if its marker sits in the owned region and a login artbot
  writes as wrote it (:mod:`artbot.tracking.ownership`); anything else with a marker is
  reported and never written to or closed;
- the tracking issue is checked before the first write (it exists, is an issue, is not
  locked, its block is well formed, it is the audit's): a bad one stops the run with nothing
  written (:func:`artbot.run.observe.preflight`);
- only the artbot-owned region of a generated issue is ever rewritten;
- a fixed item is filed, then closed as completed (two steps of the plan, one write each);
  its body carries a hidden "filed closed" line outside the owned region, so a re-run after a
  crash between the two closes it, and an issue a human reopened (``state_reason:
  reopened``) is never closed again;
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

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, assert_never, cast

from ..errors import ArtbotError, RemoteError, SubIssuesUnavailable
from ..records.marker import replace_owned_region
from ..records.observed import ObservedIssue
from ..report.results import Budget, Journal, Result, WriteBudgetSpent
from ..tracking.ownership import claim
from ..tracking.subissues import REF, AddSubIssue, MoveSubIssue, RemoveSubIssue, SubIssueDone
from .actions import (
    FACTS,
    Claims,
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
    ReadTracking,
    StatusChange,
    UpdateChecklist,
    Write,
)
from .blockwrite import merge
from .issues import canonical, duplicates
from .subissue_writes import add, add_filed, move, remove, unavailable_warning

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo


@dataclass
class References:
    """What the plan names but cannot know before it is carried out, filled in as it is."""

    observed: list[ObservedIssue]  # the issues as last listed (and as this run left them)
    ids: dict[int, int] = field(default_factory=dict)  # issue number -> id (sub-issue writes)
    filed: dict[int, ObservedIssue] = field(default_factory=dict)  # item -> issue filed now
    sub_issues: list[SubIssueDone] = field(default_factory=list)  # as they turned out
    no_sub_issues: bool = False  # a sub-issue write found that this GitHub has none
    tracking_body: str | None = None  # the tracking issue's body as just read again
    checklist: str | None = None  # the block as written (or found already so)


@dataclass
class Execution:
    """What sending one plan holds: the repository, the budget, the journal, the references."""

    repo: Repo
    budget: Budget
    journal: Journal
    refs: References


def execute(ex: Execution, plan: Plan) -> tuple[Plan, WriteBudgetSpent | None]:
    """Send ``plan``'s writes in order; returns what is left of it and why it stopped early,
    if it did (``--max-writes``). A failure that is not a warning leaves as its exception."""
    ex.journal.plan(plan.text())
    for at, action in enumerate(plan.actions):
        if isinstance(action, FACTS):
            continue
        try:
            ex.journal.extend(carry_out(ex, cast(Write, action), plan.claims))
        except WriteBudgetSpent as stop:
            return Plan(plan.actions[at:], plan.block, plan.warnings, plan.claims), stop
    return plan, None


def carry_out(ex: Execution, action: Write, claims: Claims | None) -> list[Result]:
    """One write of the plan: its results."""
    repo, refs, spend = ex.repo, ex.refs, ex.budget.spend
    match action:
        case CreateLabel():
            spend()
            repo.create_label(action.name, action.color, action.description)
            repo.cache.labels.add(action.name)
            return [Result.done(f"created label {action.name!r}", action)]
        case LabelTracking() | LinkPreset():
            return [_label(ex, action)]
        case Create():
            assert claims is not None
            return _create(ex, action, claims)
        case CloseCopies():
            assert claims is not None
            return _close_copies(ex, action, claims)
        case CloseFixed():
            return [_close_fixed(ex, action)]
        case CloseDuplicate():
            spend()
            repo.edit_issue(action.issue, state="closed", state_reason="duplicate")
            line = f"item {action.item}: closed #{action.issue} as a duplicate of #{action.keep}"
            return [Result.done(line, action)]
        case StatusChange():
            if action.comment is None:
                line = f"item {action.item}: #{action.issue} already has this status comment"
                return [Result.skipped(line, action)]
            spend()
            repo.post_comment(action.issue, action.comment)
            line = f"item {action.item}: commented on #{action.issue} (status)"
            return [Result.done(line, action)]
        case CloseWhenFixed():
            spend()
            closed = repo.edit_issue(action.issue, state="closed", state_reason="completed")
            refs.observed = [closed if i.number == closed.number else i for i in refs.observed]
            line = (
                f"item {action.item}: closed #{action.issue} as completed "
                f"(fixed in {action.fixed_in})"
            )
            return [Result.done(line, action)]
        case EditBody():
            fresh = repo.get_issue(action.issue, fresh=True)
            body = replace_owned_region(fresh.body, action.body)
            if body == fresh.body:
                line = f"item {action.item}: #{action.issue} was already up to date"
                return [Result.skipped(line, action)]
            spend()
            repo.edit_issue(action.issue, body=body)
            return [Result.done(f"item {action.item}: updated #{action.issue}", action)]
        case Comment():
            spend()
            repo.post_comment(action.issue, action.body)
            return [Result.done(f"item {action.item}: commented on #{action.issue}", action)]
        case AddSubIssue() | RemoveSubIssue() | MoveSubIssue():
            return _sub_issue(ex, action)
        case ReadTracking():
            if not (action.answered and refs.tracking_body is not None):
                refs.tracking_body = repo.get_issue(action.issue, fresh=True).body
            return []
        case UpdateChecklist():
            return [_write_block(ex, action)]
        case _:
            assert_never(action)


def _label(ex: Execution, action: LabelTracking | LinkPreset) -> Result:
    """Label the tracking issue or a preset issue; a failure is a result (and a warning),
    never the end of the run."""
    ex.budget.spend()
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


def _create(ex: Execution, action: Create, claims: Claims) -> list[Result]:
    """File the item's issue; a fixed item's is then closed as completed."""
    repo, refs, item = ex.repo, ex.refs, action.item
    out: list[Result] = []
    ex.budget.spend()
    try:
        created = repo.create_issue(action.title, action.body, list(action.labels))
    except RemoteError:
        # The create may have taken effect before the error (a 502 after the write, a dropped
        # connection). GitHub is the source of truth: look before deciding it failed.
        listed = repo.list_issues(list(claims.audit.labels))
        refs.observed, _ = claim(listed, claims.audit, claims.logins, claims.tracking)
        found = canonical(refs.observed, claims.audit)
        if item not in found:
            raise
        created = found[item]
        line = f"item {item}: the create failed but had taken effect as #{created.number}"
        out.append(Result.done(line, action, issue=created.number))
    else:
        logins = {x.casefold() for x in claims.logins}
        if created.author and created.author.casefold() not in logins:
            raise ArtbotError(
                f"item {item}: GitHub filed #{created.number} as @{created.author}, but artbot "
                f"is configured to write as {', '.join('@' + x for x in claims.logins)}: set "
                f"--author {created.author} (or login in findings/audit.yaml); the next run "
                "finds the issue by its marker"
            )
        refs.observed.append(created)
        line = f"item {item}: filed #{created.number} {created.html_url}"
        out.append(Result.done(line, action, issue=created.number))
    repo.cache.labels |= set(action.labels)
    refs.filed[item] = created
    return out


def _close_fixed(ex: Execution, action: CloseFixed) -> Result:
    """Close a fixed item's issue as completed: the one filed by the create right before
    (looked up), unless that create found it filed already and closed."""
    refs, item = ex.refs, action.item
    number = action.issue
    if number is None:
        filed = refs.filed.get(item)
        if filed is None or filed.state != "open":
            line = f"item {item}: no open issue filed by this run to close"
            return Result.skipped(line, action)
        number = filed.number
    ex.budget.spend()
    closed = ex.repo.edit_issue(number, state="closed", state_reason="completed")
    refs.observed = [closed if i.number == number else i for i in refs.observed]
    if item in refs.filed:
        refs.filed[item] = closed
    line = f"item {item}: closed #{number} as completed ({action.fixed_in})"
    return Result.done(line, replace(action, issue=number))


def _close_copies(ex: Execution, action: CloseCopies, claims: Claims) -> list[Result]:
    """Read the list again (the issues just filed are kept too, in case the list does not
    show them yet) and close any second issue of an item just filed."""
    refs, audit = ex.refs, claims.audit
    listed = ex.repo.list_issues(list(audit.labels))
    listed, _ = claim(listed, audit, claims.logins, claims.tracking)
    numbers = {i.number for i in listed}
    refs.observed = [*listed, *(i for i in refs.observed if i.number not in numbers)]
    out: list[Result] = []
    for extra, keep in duplicates(refs.observed, audit):
        if extra.marker is None or extra.marker.item not in action.items:
            continue
        try:
            ex.budget.spend()
        except WriteBudgetSpent:  # the copies closed so far are reported as done
            ex.journal.extend(out)
            raise
        closed = ex.repo.edit_issue(extra.number, state="closed", state_reason="duplicate")
        refs.observed = [closed if i.number == closed.number else i for i in refs.observed]
        line = f"item {extra.marker.item}: closed #{extra.number} as a duplicate of #{keep}"
        out.append(Result.done(line, CloseDuplicate(extra.marker.item, extra.number, keep)))
    kept = canonical(refs.observed, audit)
    for item in action.items:
        if item in kept:
            refs.filed[item] = kept[item]
    return out


def _sub_issue(ex: Execution, action: AddSubIssue | RemoveSubIssue | MoveSubIssue) -> list[Any]:
    """One sub-issue write, as planned, its references looked up; a failure is a warning, and
    what it came to is kept for the record (:func:`artbot.tracking.subissues.settle`). Where
    GitHub has no sub-issues (a 404), that is said once and the rest are left."""
    refs, repo = ex.refs, ex.repo
    refs.tracking_body = None  # an answer counts only from the write right before the read
    if refs.no_sub_issues:
        return []
    try:
        if isinstance(action, AddSubIssue) and action.issue is None:  # filed by this run
            issue = refs.filed.get(action.item)
            if issue is None:
                return []
            ex.budget.spend()
            added, done, parent = add_filed(repo, action, issue)
            if done is None:  # the payload has no sub-issue summary: this GitHub has none
                refs.no_sub_issues = True
                return [added]
            assert issue.id is not None  # add_filed answers None without one
            refs.ids[issue.number] = issue.id
            refs.tracking_body = parent.body if parent is not None else None
            refs.sub_issues.append(done)
            return [added]
        if isinstance(action, MoveSubIssue):
            action, missing = _looked_up(refs, action)
            if missing is not None:
                line = (
                    f"{action.describe()}: not sent, {missing} is not among the sub-issues (its "
                    "add did not go through); the next sync puts them in order"
                )
                return [Result.skipped(line, action)]
        ex.budget.spend()
        if isinstance(action, AddSubIssue):
            results, done = add(repo, action, refs.ids)
        elif isinstance(action, RemoveSubIssue):
            results, done = remove(repo, action, refs.ids)
        else:
            results, done = move(repo, action, refs.ids)
        refs.sub_issues.append(done)
        return results
    except SubIssuesUnavailable:
        refs.no_sub_issues = True
        return [Result.failed(unavailable_warning(action.parent))]


def _looked_up(refs: References, action: MoveSubIssue) -> tuple[MoveSubIssue, str | None]:
    """A planned move with the issues filed this run looked up, and the first issue it names
    that is not in the list (an add that did not go through), if any."""
    refused = {d.issue for d in refs.sub_issues if isinstance(d.action, AddSubIssue) and not d.ok}
    numbers: list[int | None] = []
    for n in (action.issue, action.after, action.before):
        if n is not None and n >= REF:
            filed = refs.filed.get(n - REF)
            if filed is None:
                return action, f"item {n - REF}'s new issue"
            n = filed.number
        numbers.append(n)
    issue, after, before = numbers
    assert issue is not None  # a move names the issue it moves
    looked_up = replace(action, issue=issue, after=after, before=before)
    missing = next((f"#{n}" for n in numbers if n in refused), None)
    return looked_up, missing


def _write_block(ex: Execution, action: UpdateChecklist) -> Result:
    """Write the tracking issue's block, once, at the end: the planned block merged into the
    body just read again (:class:`ReadTracking`), with the references looked up. GitHub has
    no compare-and-swap for issue bodies: this keeps the window for losing a human's edit as
    short as one request."""
    refs, number = ex.refs, action.issue
    body = refs.tracking_body
    numbers = {item: issue.number for item, issue in refs.filed.items()}
    refs.checklist, new = merge(
        action.write, body, numbers, refs.sub_issues, unavailable=refs.no_sub_issues
    )
    if new == body:
        return Result.skipped(f"the checklist in #{number} is already as planned", action)
    ex.budget.spend()
    ex.repo.edit_issue(number, body=new)
    return Result.done(f"updated the checklist in #{number}", action)
