"""The tracking issue's native sub-issues: what should be there against what is -> actions.

Pure: no I/O. artbot makes the audit's issues (#1108-#1110 and every issue it filed) the
tracking issue's sub-issues, in item order, each once; the Markdown checklist stays beside
them. The rules are the README's "Sub-issues" (a person's removal or another parent is
recorded and respected, GitHub's cap of 100 reported), decided here: the list is read only
when :func:`needs_list` says the record does not account for it; a wanted issue in the list
is recorded as artbot's, whoever put it there; order is restored with the fewest moves
(:func:`moves`; other sub-issues stay where they are). What artbot remembers is a
:class:`SubIssueRecord`, in the block's hidden record (:mod:`artbot.tracking.record`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..records.observed import SubIssuesSummary

MAX_SUB_ISSUES = 100  # GitHub's cap per parent issue
# Beyond any issue number GitHub gives: a plan names an issue it files as REF + its item
# (artbot.run.blockwrite.ref), looked up once it is filed.
REF = 2**40


def _name(number: int) -> str:
    return f"#{number}" if number < REF else f"item {number - REF}'s new issue"


@dataclass(frozen=True)
class Wanted:
    """An audit item's issue, which should be a sub-issue of the tracking issue."""

    item: int
    number: int


@dataclass(frozen=True)
class SubIssueRecord:
    """What artbot remembers about the tracking issue's sub-issues (in the block's record):
    ``added``, artbot's, in GitHub's order; ``removed``, those a person removed (left out from
    then on); ``elsewhere``, (issue, its other parent); ``others``, how many other sub-issues
    the tracking issue had when the list was last read."""

    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    elsewhere: tuple[tuple[int, str], ...] = ()
    others: int = 0

    @property
    def parents(self) -> dict[int, str]:
        return dict(self.elsewhere)

    def with_added(self, numbers: Sequence[int]) -> SubIssueRecord:
        """After ``open`` added ``numbers``: GitHub appends each to the end of the list."""
        added = (*self.added, *(n for n in numbers if n not in self.added))
        return replace(self, added=added, removed=tuple(n for n in self.removed if n not in added))


def parent_ref(parent_repo: str, parent_number: int, repo: str) -> str:
    """How a parent issue is named in the checklist: ``#N`` in the same repository."""
    same = parent_repo.casefold() == repo.casefold()
    return f"#{parent_number}" if same else f"{parent_repo}#{parent_number}"


# --- actions (they fit artbot.run.plan's Plan: frozen dataclasses with describe()) ------------


@dataclass(frozen=True)
class AddSubIssue:
    item: int
    issue: int | None  # None in open's plan: the issue is not filed yet
    parent: int
    replace_parent: bool = False

    def describe(self) -> str:
        what = f"#{self.issue}" if self.issue else "the new issue"
        text = f"item {self.item}: add {what} to #{self.parent}'s sub-issues"
        return text + (" (replacing any other parent)" if self.replace_parent else "")


@dataclass(frozen=True)
class MoveSubIssue:
    """Reprioritize: put ``issue`` right after ``after``, or right before ``before``."""

    item: int
    issue: int
    parent: int
    after: int | None = None
    before: int | None = None

    def describe(self) -> str:
        where = f"after {_name(self.after)}" if self.after else f"before {_name(self.before or 0)}"
        return f"item {self.item}: move {_name(self.issue)} {where} in #{self.parent}'s sub-issues"


@dataclass(frozen=True)
class RemoveSubIssue:
    """artbot added ``issue``, and it is no longer an item's issue (a duplicate)."""

    issue: int
    parent: int

    def describe(self) -> str:
        return f"remove #{self.issue} from #{self.parent}'s sub-issues (no longer an item's issue)"


@dataclass(frozen=True)
class SubIssueRemovedByHand:
    item: int
    issue: int
    parent: int

    def describe(self) -> str:
        return (
            f"item {self.item}: #{self.issue} was removed from #{self.parent}'s sub-issues by "
            "a person; left out from now on (noted in the checklist)"
        )


@dataclass(frozen=True)
class SubIssueHasParent:
    item: int
    issue: int
    parent: int
    other: str

    def describe(self) -> str:
        return (
            f"item {self.item}: #{self.issue} already has the parent {self.other}; not moved "
            "(`artbot sync --replace-parent` moves it)"
        )


@dataclass(frozen=True)
class SubIssuesFull:
    parent: int
    left_out: tuple[int, ...]

    def describe(self) -> str:
        issues = ", ".join(f"#{n}" for n in self.left_out)
        return f"#{self.parent} has {MAX_SUB_ISSUES} sub-issues, GitHub's cap: {issues} left out"


@dataclass(frozen=True)
class SubIssuesUpToDate:
    parent: int

    def describe(self) -> str:
        return f"tracking issue #{self.parent}: sub-issues up to date"


@dataclass(frozen=True)
class NoSubIssues:
    parent: int

    def describe(self) -> str:
        return f"tracking issue #{self.parent}: no sub-issues (checklist only)"


SubIssueAction = (
    AddSubIssue
    | MoveSubIssue
    | RemoveSubIssue
    | SubIssueRemovedByHand
    | SubIssueHasParent
    | SubIssuesFull
    | SubIssuesUpToDate
    | NoSubIssues
)
WRITES = (AddSubIssue, MoveSubIssue, RemoveSubIssue)


@dataclass(frozen=True)
class SubIssuePlan:
    """The actions, and the record as it reads once they are carried out."""

    actions: tuple[SubIssueAction, ...] = field(default_factory=tuple)
    record: SubIssueRecord = field(default_factory=SubIssueRecord)


# --- deciding ------------------------------------------------------------------------------


def needs_list(
    wanted: Sequence[Wanted],
    record: SubIssueRecord | None,
    summary: SubIssuesSummary,
    *,
    replace_parent: bool = False,
) -> bool:
    """Whether the list of sub-issues must be read: not when the tracking issue's summary
    and the record agree and the record accounts for every wanted issue in item order."""
    if record is None or summary.total != len(record.added) + record.others:
        return True
    numbers = [w.number for w in wanted]
    mine = set(record.added)
    if not set(numbers) <= mine | set(record.removed) | set(record.parents):
        return True
    if mine - set(numbers) or list(record.added) != [n for n in numbers if n in mine]:
        return True  # something to remove, or out of item order
    return replace_parent and bool(record.elsewhere)


def plan_sub_issues(
    parent: int,
    wanted: Sequence[Wanted],
    listed: Sequence[int],
    record: SubIssueRecord | None,
    *,
    replace_parent: bool = False,
) -> SubIssuePlan:
    """The actions that make ``wanted`` the sub-issues of ``parent`` (``listed``: its
    sub-issues now, in order), by the rules in the module docstring."""
    record = record or SubIssueRecord()
    numbers = {w.number for w in wanted}
    present = set(listed)
    mine, parents = set(record.added), record.parents
    actions: list[SubIssueAction] = [
        RemoveSubIssue(n, parent) for n in listed if n in mine and n not in numbers
    ]
    gone = {a.issue for a in actions if isinstance(a, RemoveSubIssue)}
    others = [n for n in listed if n not in numbers and n not in gone]
    room = MAX_SUB_ISSUES - (len(listed) - len(gone))
    added: list[int] = []
    removed: list[int] = []
    elsewhere: dict[int, str] = {}
    adds: list[AddSubIssue] = []
    left_out: list[int] = []
    for w in wanted:
        n = w.number
        if n in present:
            added.append(n)
        elif n in record.removed:
            removed.append(n)
        elif n in mine:
            removed.append(n)
            actions.append(SubIssueRemovedByHand(w.item, n, parent))
        elif n in parents and not replace_parent:
            elsewhere[n] = parents[n]
        elif room <= 0:
            left_out.append(n)
        else:
            room -= 1
            adds.append(AddSubIssue(w.item, n, parent, replace_parent=replace_parent))
            added.append(n)
    actions += adds
    order = [n for n in listed if n not in gone] + [a.issue for a in adds if a.issue]
    item_of = {w.number: w.item for w in wanted}
    for issue, after, before in moves(order, added):
        actions.append(MoveSubIssue(item_of[issue], issue, parent, after, before))
    if left_out:
        actions.append(SubIssuesFull(parent, tuple(left_out)))
    if not any(isinstance(a, WRITES) for a in actions):
        actions.append(SubIssuesUpToDate(parent))
    new = SubIssueRecord(tuple(added), tuple(removed), tuple(elsewhere.items()), len(others))
    return SubIssuePlan(tuple(actions), new)


def moves(order: Sequence[int], desired: Sequence[int]) -> list[tuple[int, int | None, int | None]]:
    """``(issue, after, before)`` moves that put ``desired`` (each in ``order``) in that
    relative order: the fewest there can be (everything outside one longest run already in
    order moves), each right after its predecessor, or, for the first, before the first
    issue that stays. Issues not in ``desired`` are not moved."""
    rank = {n: i for i, n in enumerate(desired)}
    keep = set(_longest_increasing([rank[n] for n in order if n in rank]))
    if not desired:
        return []
    first_kept = desired[min(keep)]
    out: list[tuple[int, int | None, int | None]] = []
    for k, n in enumerate(desired):
        if k in keep:
            continue
        out.append((n, desired[k - 1], None) if k else (n, None, first_kept))
    return out


def _longest_increasing(values: Sequence[int]) -> list[int]:
    """A longest strictly increasing subsequence of ``values`` (the values themselves)."""
    if not values:
        return []
    length = [1] * len(values)
    before = [-1] * len(values)
    for i, v in enumerate(values):
        for j in range(i):
            if values[j] < v and length[j] + 1 > length[i]:
                length[i], before[i] = length[j] + 1, j
    i = max(range(len(values)), key=lambda k: (length[k], -k))
    out = []
    while i >= 0:
        out.append(values[i])
        i = before[i]
    return out[::-1]


def apply_moves(
    order: Sequence[int], planned: Sequence[tuple[int, int | None, int | None]]
) -> list[int]:
    """``order`` after ``planned`` moves, as GitHub carries them out (for tests and apply)."""
    out = list(order)
    for issue, after, before in planned:
        out.remove(issue)
        anchor = after if after is not None else before
        assert anchor is not None, "a move names the issue it goes after or before"
        at = out.index(anchor) + (1 if after is not None else 0)
        out.insert(at, issue)
    return out


# --- settling: the record as the writes turned out ------------------------------------------


@dataclass(frozen=True)
class SubIssueStart:
    """What the record written after a run is worked out from, planned with the rest: the
    record as planned (issues filed this run named by reference), the record the block holds
    now, the list as read (or as recorded, when it was not read), and whether the run keeps
    the sub-issues in step (``sync``) or only adds what it files (``open``)."""

    parent: int
    planned: SubIssueRecord | None
    old: SubIssueRecord | None
    order: tuple[int, ...] = ()
    in_step: bool = False


@dataclass(frozen=True)
class SubIssueDone:
    """One sub-issue write as it turned out, with the numbers looked up: ``ok`` when GitHub
    took it; ``other``, the other parent that made GitHub refuse an add; ``filed`` for the
    add of an issue this run filed."""

    action: AddSubIssue | RemoveSubIssue | MoveSubIssue
    ok: bool
    other: str | None = None
    filed: bool = False

    @property
    def issue(self) -> int:
        assert self.action.issue is not None, "a write as sent names its issue"
        return self.action.issue


def settle(
    start: SubIssueStart,
    done: Sequence[SubIssueDone],
    filed: Mapping[int, int],
    fresh: SubIssueRecord | None,
    *,
    unavailable: bool = False,
) -> SubIssueRecord | None:
    """The record to write once the writes in ``done`` are carried out: only what is known to
    have happened. ``filed``: item -> the issue this run filed for it; ``fresh``: the record
    as the block reads right before the write (``open`` adds to it); ``unavailable``: a write
    found that this GitHub has no sub-issues (the record is left as it was). When every write
    went through, this is the planned record with the issues filed looked up."""
    if unavailable:
        return start.old if start.in_step else fresh
    added_filed = [d.issue for d in done if d.filed and d.ok]

    def known(n: int) -> int | None:
        number = n if n < REF else filed.get(n - REF)
        return None if n >= REF and number not in added_filed else number

    base = start.planned
    if base is not None:
        base = replace(base, added=tuple(m for n in base.added if (m := known(n)) is not None))
    order, mine = list(start.order), list(base.added) if base else []
    elsewhere = dict(base.elsewhere) if base else {}
    touched = False
    for d in done:
        a, n = d.action, d.issue
        if d.filed:
            if d.ok and start.in_step:
                order.append(n)
                touched = True
            continue
        touched = True
        if not d.ok:
            if isinstance(a, AddSubIssue):
                mine = [m for m in mine if m != n]
                if d.other is not None:
                    elsewhere[n] = d.other
        elif isinstance(a, AddSubIssue):
            order.append(n)
        elif isinstance(a, RemoveSubIssue):
            order.remove(n)
        else:
            order = apply_moves(order, [(n, a.after, a.before)])
    record = base if start.in_step else fresh
    if touched and record is not None:
        ours = set(mine)
        record = replace(
            record,
            added=tuple(n for n in order if n in ours),
            elsewhere=tuple(elsewhere.items()),
        )
    return (record or SubIssueRecord()).with_added(added_filed) if added_filed else record
