"""Carry out the sub-issue part of ``open`` and ``sync`` against a :class:`Repo`.

The decisions are :mod:`artbot.tracking.subissues`'s (pure); this module reads what they need and
carries them out. Sub-issues sit beside the checklist, never in its way: a failed sub-issue
write is a warning, the run goes on, and the record written to the checklist block holds
only what is known to have happened, so the next sync reads the list and settles the rest.
Where GitHub has no sub-issues (no ``sub_issues_summary`` on the tracking issue, or a 404
from the endpoints: a GitHub Enterprise Server without them) artbot says so once a run and
keeps the checklist only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Literal

from ..errors import RemoteError, SubIssueRefused, SubIssuesUnavailable
from ..github.repo import Repo
from ..models import ObservedIssue
from ..tracking.checklist import ChecklistEntry
from ..tracking.subissues import (
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    RemoveSubIssue,
    SubIssueHasParent,
    SubIssuePlan,
    SubIssueRecord,
    SubIssuesUpToDate,
    Wanted,
    apply_moves,
    moves,
    needs_list,
    parent_ref,
    plan_sub_issues,
)
from .results import Result

Warn = Callable[[str], None]
Done = Callable[[Result], None]


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


def carry_out(
    repo: Repo, step: SubIssueStep, known: Sequence[ObservedIssue], warn: Warn, done: Done
) -> SubIssueRecord | None:
    """Carry out ``step``'s writes; returns the record as things turned out.

    The moves are worked out again from the order the adds actually left (a refused add
    changes it); when every add went through they are the planned ones.
    """
    plan, parent = step.plan, step.parent
    if not step.available:  # the caller has said so already
        return step.old
    writes = [a for a in plan.actions if isinstance(a, (AddSubIssue, RemoveSubIssue))]
    if not writes and not any(isinstance(a, MoveSubIssue) for a in plan.actions):
        return plan.record
    ids = {i.number: i.id for i in (*known, *step.listed) if i.id is not None}
    item_of = {w.number: w.item for w in step.wanted}
    order = [i.number for i in step.listed]
    mine = list(plan.record.added)
    elsewhere = dict(plan.record.elsewhere)
    try:
        for action in writes:
            if isinstance(action, RemoveSubIssue):
                if _try(partial(repo.remove_sub_issue, parent, ids[action.issue]), warn):
                    order.remove(action.issue)
                    done(
                        Result.done(f"removed #{action.issue} from #{parent}'s sub-issues", action)
                    )
                continue
            number = action.issue
            assert number is not None
            if _add(repo, action, number, ids, warn):
                order.append(number)
                done(
                    Result.done(
                        f"item {action.item}: added #{number} to #{parent}'s sub-issues", action
                    )
                )
                continue
            mine.remove(number)
            other = _other_parent(repo, number, parent, warn)
            if other is not None:
                elsewhere[number] = other
                warn(SubIssueHasParent(action.item, number, parent, other).describe())
        for move in moves(order, [n for n in mine if n in order]):
            if _move(repo, parent, move, ids, warn):
                order = apply_moves(order, [move])
                issue, after, before = move
                moved = MoveSubIssue(item_of.get(issue, 0), issue, parent, after, before)
                done(Result.done(moved.describe().replace(": move ", ": moved ", 1), moved))
    except SubIssuesUnavailable:
        warn(unavailable_warning(parent))
        return step.old
    ours = set(mine)
    return replace(
        plan.record,
        added=tuple(n for n in order if n in ours),
        elsewhere=tuple(elsewhere.items()),
    )


def add_filed(
    repo: Repo, parent: int, filed: Mapping[int, ObservedIssue], warn: Warn, done: Done
) -> list[int]:
    """``open``: make each issue just filed (item -> issue) a sub-issue of ``parent``.

    A new issue has no parent, so a refusal here is GitHub's cap or an error: warned about,
    and the next sync settles it. Returns the numbers added, in the order added.
    """
    added: list[int] = []
    for item, issue in sorted(filed.items()):
        if issue.sub_issues is None or issue.id is None:
            warn(unavailable_warning(parent))  # the payload has no summary: no sub-issues here
            break
        try:
            repo.add_sub_issue(parent, issue.id, replace_parent=False)
        except SubIssuesUnavailable:
            warn(unavailable_warning(parent))
            break
        except RemoteError as exc:
            warn(f"item {item}: #{issue.number} not added to #{parent}'s sub-issues: {exc}")
            continue
        added.append(issue.number)
        line = f"item {item}: added #{issue.number} to #{parent}'s sub-issues"
        done(Result.done(line, kind="AddSubIssue", item=item, issue=issue.number))
    return added


def _add(repo: Repo, action: AddSubIssue, number: int, ids: dict[int, int], warn: Warn) -> bool:
    """Add one; False when GitHub refused it (or it failed): the caller finds out why."""
    try:
        if number not in ids:  # e.g. #1108-#1110 before the first sync labels them
            found = repo.get_issue(number).id
            if found is None:
                raise RemoteError(f"#{number} came back without an id")
            ids[number] = found
        repo.add_sub_issue(action.parent, ids[number], replace_parent=action.replace_parent)
        return True
    except SubIssuesUnavailable:
        raise
    except SubIssueRefused:
        return False
    except RemoteError as exc:
        warn(f"item {action.item}: #{number} not added to #{action.parent}'s sub-issues: {exc}")
        return False


def _other_parent(repo: Repo, number: int, parent: int, warn: Warn) -> str | None:
    """After a refused add: the other parent that caused it, or None (warned about)."""
    try:
        found = repo.parent_of(number)
    except RemoteError as exc:
        warn(f"#{number}: GitHub refused it as a sub-issue of #{parent}; {exc}")
        return None
    if found is None:
        warn(f"#{number}: GitHub refused it as a sub-issue of #{parent} (it has no parent)")
        return None
    if found == (repo.full_name, parent):
        return None  # it is there already (a concurrent run): the next sync records it
    return parent_ref(found[0], found[1], repo.full_name)


def _move(
    repo: Repo,
    parent: int,
    move: tuple[int, int | None, int | None],
    ids: Mapping[int, int],
    warn: Warn,
) -> bool:
    issue, after, before = move
    return _try(
        lambda: repo.reprioritize_sub_issue(
            parent,
            ids[issue],
            after_id=ids[after] if after is not None else None,
            before_id=ids[before] if before is not None else None,
        ),
        warn,
    )


def _try(write: Callable[[], None], warn: Warn) -> bool:
    try:
        write()
        return True
    except SubIssuesUnavailable:
        raise
    except RemoteError as exc:
        warn(f"sub-issues: {exc}")
        return False
