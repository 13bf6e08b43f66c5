"""The sub-issue part of ``open`` and ``sync``: the one read of the list, the plan from it, and
each write as the executor carries it out.

The decisions are :mod:`artbot.tracking.subissues`'s (pure); this module reads what they need
and carries them out. A failed sub-issue write is a warning and the run goes on; the record
holds only what is known to have happened (docs/design.md, "send"). Where GitHub has no
sub-issues (no ``sub_issues_summary``, or a 404 from the endpoints) artbot says so once a run
and keeps the checklist only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Literal

from ..errors import RemoteError, SubIssueRefused, SubIssuesUnavailable
from ..records.observed import ObservedIssue
from ..report.results import Result
from ..tracking.checklist import ChecklistEntry
from ..tracking.subissues import (
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    RemoveSubIssue,
    SubIssueDone,
    SubIssueHasParent,
    SubIssuePlan,
    SubIssueRecord,
    SubIssuesUpToDate,
    Wanted,
    needs_list,
    parent_ref,
    plan_sub_issues,
)

if TYPE_CHECKING:
    from ..github.client import GitHubRepo as Repo


def unavailable_warning(parent: int) -> str:
    return (
        f"sub-issues: this GitHub has no sub-issues (tracking issue #{parent}); "
        "the checklist alone tracks progress"
    )


def wanted_sub_issues(entries: Sequence[ChecklistEntry]) -> list[Wanted]:
    """Every item's issue, in item order: what the tracking issue's sub-issues should be."""
    return [Wanted(e.item, e.issue) for e in entries if e.issue is not None]


@dataclass(frozen=True)
class SubIssueStep:
    """The sub-issue part of a sync: planned from what was read, then carried out."""

    parent: int
    wanted: tuple[Wanted, ...]
    plan: SubIssuePlan
    old: SubIssueRecord | None  # the record the checklist block holds now
    listed: tuple[ObservedIssue, ...] = ()  # the list as read (empty when it was not read)
    available: bool = True  # False: this GitHub has no sub-issues (warn once, keep the record)
    skipped: str | None = None  # why the list could not be read (403, 422, 5xx): the warning

    @property
    def expected(self) -> SubIssueRecord | None:
        """The record to write once the plan is carried out as planned."""
        return self.plan.record if self.available else self.old


# What observing the sub-issues found: the list (None: not read, the record holds), that this
# GitHub has none (False), or why the read failed (a str).
Listed = tuple[ObservedIssue, ...] | Literal[False] | None | str


def observe_sub_issues(
    repo: Repo,
    tracking: ObservedIssue,
    wanted: Sequence[Wanted],
    old: SubIssueRecord | None,
    *,
    replace_parent: bool = False,
) -> Listed:
    """The one read of the sub-issue part, made only when the tracking issue's summary
    disagrees with the record: the list, None when it need not be read, False when this
    GitHub has no sub-issues, or why the read failed (the sync then leaves them as they are)."""
    if tracking.sub_issues is None:
        return False
    if not needs_list(tuple(wanted), old, tracking.sub_issues, replace_parent=replace_parent):
        return None
    parent = tracking.number
    try:
        return tuple(repo.list_sub_issues(parent))
    except SubIssuesUnavailable:
        return False
    except RemoteError as exc:  # degrade: the rest of the sync goes on, the record is kept
        return f"sub-issues: could not read #{parent}'s sub-issues, left as they are: {exc}"


def plan_step(
    tracking: ObservedIssue,
    wanted: Sequence[Wanted],
    old: SubIssueRecord | None,
    listed: Listed,
    *,
    replace_parent: bool = False,
) -> SubIssueStep:
    """Plan from what :func:`observe_sub_issues` found; pure."""
    parent, want = tracking.number, tuple(wanted)
    keep = SubIssuePlan((NoSubIssues(parent),), old or SubIssueRecord())
    if listed is False:
        return SubIssueStep(parent, want, keep, old, available=False)
    if listed is None:
        assert old is not None
        return SubIssueStep(parent, want, SubIssuePlan((SubIssuesUpToDate(parent),), old), old)
    if isinstance(listed, str):  # the read failed: degrade, the rest of the sync goes on
        return SubIssueStep(parent, want, keep, old, available=False, skipped=listed)
    numbers = [i.number for i in listed]
    plan = plan_sub_issues(parent, want, numbers, old, replace_parent=replace_parent)
    return SubIssueStep(parent, want, plan, old, listed)


def add(repo: Repo, action: AddSubIssue, ids: dict[int, int]) -> tuple[list[Result], SubIssueDone]:
    """One planned add of an existing issue: done, or why GitHub refused it (a warning)."""
    number = action.issue
    assert number is not None
    failed = _add(repo, action, number, ids)
    if failed != "":  # done, or failed for a reason other than GitHub's refusal
        line = f"item {action.item}: added #{number} to #{action.parent}'s sub-issues"
        return _came_to(action, failed, line)
    other, why = _other_parent(repo, number, action.parent)
    if other is None:
        return ([Result.failed(why)] if why else []), SubIssueDone(action, False)
    refused = SubIssueHasParent(action.item, number, action.parent, other).describe()
    return [Result.failed(refused)], SubIssueDone(action, False, other)


def add_filed(
    repo: Repo, action: AddSubIssue, issue: ObservedIssue
) -> tuple[Result, SubIssueDone | None, ObservedIssue | None]:
    """Make an issue this run filed a sub-issue: the result, what it came to (None: this
    GitHub has no sub-issues) and, with GitHub's answer, the tracking issue as it is then. A
    new issue has no parent, so a refusal is GitHub's cap or an error: a warning, and the
    next sync settles it."""
    parent, item = action.parent, action.item
    sent = replace(action, issue=issue.number)
    if issue.sub_issues is None or issue.id is None:
        # The payload has no summary: no sub-issues here.
        return Result.failed(unavailable_warning(parent)), None, None
    try:
        answer = repo.add_sub_issue(parent, issue.id, replace_parent=False)
    except SubIssuesUnavailable:
        raise  # the executor says so once and leaves the rest
    except RemoteError as exc:
        line = f"item {item}: #{issue.number} not added to #{parent}'s sub-issues: {exc}"
        return Result.failed(line), SubIssueDone(sent, False, filed=True), None
    line = f"item {item}: added #{issue.number} to #{parent}'s sub-issues"
    return Result.done(line, sent), SubIssueDone(sent, True, filed=True), answer


def remove(
    repo: Repo, action: RemoveSubIssue, ids: Mapping[int, int]
) -> tuple[list[Result], SubIssueDone]:
    failed = _try(partial(repo.remove_sub_issue, action.parent, ids[action.issue]))
    return _came_to(action, failed, f"removed #{action.issue} from #{action.parent}'s sub-issues")


def move(
    repo: Repo, action: MoveSubIssue, ids: Mapping[int, int]
) -> tuple[list[Result], SubIssueDone]:
    """One planned move, its numbers looked up."""
    failed = _move(repo, action.parent, (action.issue, action.after, action.before), ids)
    return _came_to(action, failed, action.describe().replace(": move ", ": moved ", 1))


def _came_to(
    action: AddSubIssue | RemoveSubIssue | MoveSubIssue, failed: str | None, line: str
) -> tuple[list[Result], SubIssueDone]:
    """A write's result and what it came to: done (``line``), or why it failed (a warning)."""
    if failed:
        return [Result.failed(failed)], SubIssueDone(action, False)
    return [Result.done(line, action)], SubIssueDone(action, True)


def _add(repo: Repo, action: AddSubIssue, number: int, ids: dict[int, int]) -> str | None:
    """Add one: None when done, "" when GitHub refused it (the caller finds out why), else
    why it failed."""
    try:
        if number not in ids:  # e.g. #1108-#1110 before the first sync labels them
            found = repo.get_issue(number).id
            if found is None:
                raise RemoteError(f"#{number} came back without an id")
            ids[number] = found
        repo.add_sub_issue(action.parent, ids[number], replace_parent=action.replace_parent)
        return None
    except SubIssuesUnavailable:
        raise
    except SubIssueRefused:
        return ""
    except RemoteError as exc:
        return f"item {action.item}: #{number} not added to #{action.parent}'s sub-issues: {exc}"


def _other_parent(repo: Repo, number: int, parent: int) -> tuple[str | None, str | None]:
    """After a refused add: (the other parent that caused it, or None; what to warn about)."""
    try:
        found = repo.parent_of(number)
    except RemoteError as exc:
        return None, f"#{number}: GitHub refused it as a sub-issue of #{parent}; {exc}"
    if found is None:
        return None, f"#{number}: GitHub refused it as a sub-issue of #{parent} (it has no parent)"
    if found == (repo.full_name, parent):
        return None, None  # it is there already (a concurrent run): the next sync records it
    return parent_ref(found[0], found[1], repo.full_name), None


def _move(
    repo: Repo, parent: int, move: tuple[int, int | None, int | None], ids: Mapping[int, int]
) -> str | None:
    issue, after, before = move
    return _try(
        lambda: repo.reprioritize_sub_issue(
            parent,
            ids[issue],
            after_id=ids[after] if after is not None else None,
            before_id=ids[before] if before is not None else None,
        )
    )


def _try(write: Callable[[], None]) -> str | None:
    """None when ``write`` went through, else why not (a sub-issue failure is a warning)."""
    try:
        write()
        return None
    except SubIssuesUnavailable:
        raise
    except RemoteError as exc:
        return f"sub-issues: {exc}"
