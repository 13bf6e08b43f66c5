"""What a plan is made of: one frozen dataclass per action, each with ``describe()``, and the
:class:`Plan` that holds them in the order they are carried out.

A plan is a value that ``--dry-run`` prints, ``--json`` serialises, tests assert on, and
:mod:`artbot.run.execute` carries out. Facts (an issue that exists, a foreign copy) sit in the
plan beside the writes, so the plan reads as what the run found and will do; the executor
carries out :data:`Write` and nothing else.
"""

from __future__ import annotations

import typing
from dataclasses import asdict, dataclass, field
from typing import Any

from ..records.models import Audit
from ..tracking.checklist import ChecklistEntry
from ..tracking.ownership import Foreign
from ..tracking.requests import Asked, CarryOutRequest, DropRequest, Request, RevertTick
from ..tracking.subissues import (
    AddSubIssue,
    MoveSubIssue,
    NoSubIssues,
    RemoveSubIssue,
    SubIssueHasParent,
    SubIssueRecord,
    SubIssueRemovedByHand,
    SubIssuesFull,
    SubIssueStart,
    SubIssuesUpToDate,
)
from .blockwrite import BlockWrite


@dataclass(frozen=True)
class Create:
    item: int
    title: str
    labels: tuple[str, ...]
    body: str = field(default="", repr=False)  # as filed (a fixed item's says "filed closed")
    # The recorded status decides how the issue is filed (see artbot.render.status_view):
    # fixed_in set -> filed, then closed as completed (the :class:`CloseFixed` planned right
    # after it); partly_fixed_in -> open, scoped to what remains.
    fixed_in: str | None = None
    partly_fixed_in: str | None = None

    def describe(self) -> str:
        text = f"item {self.item}: create issue {self.title!r}"
        if self.fixed_in:
            return f"{text}, filed closed (fixed in {self.fixed_in})"
        if self.partly_fixed_in:
            return f"{text}, open, scoped to what remains (partly fixed in {self.partly_fixed_in})"
        return text


@dataclass(frozen=True)
class CloseFixed:
    """Close a fixed item's issue as completed: the one the :class:`Create` right before filed
    (``issue`` None, looked up when it is sent), or one whose close did not happen (a crash)."""

    item: int
    issue: int | None
    fixed_in: str

    def describe(self) -> str:
        which = f"#{self.issue}" if self.issue is not None else "the issue just filed"
        return f"item {self.item}: close {which} as completed (fixed in {self.fixed_in})"


@dataclass(frozen=True)
class StatusChange:
    """The recorded status differs from what the issue states: one comment, then the edit.
    ``comment`` is the comment to post; None when the newest artbot status comment states it
    already (a re-run after a crash between the comment and the body edit)."""

    item: int
    issue: int
    before: str | None
    after: str
    comment: str | None = None

    def describe(self) -> str:
        was = self.before or "no status"
        return f"item {self.item}: status of #{self.issue} changed ({was} -> {self.after})"


@dataclass(frozen=True)
class CloseWhenFixed:
    """``close_when_fixed``: a status change to fixed closes the issue artbot filed."""

    item: int
    issue: int
    fixed_in: str

    def describe(self) -> str:
        return (
            f"item {self.item}: close #{self.issue} as completed, every claim fixed in "
            f"{self.fixed_in} (close_when_fixed)"
        )


@dataclass(frozen=True)
class Exists:
    item: int
    issue: int
    state: str

    def describe(self) -> str:
        return f"item {self.item}: already filed as #{self.issue} ({self.state})"


@dataclass(frozen=True)
class Preset:
    item: int
    issue: int

    def describe(self) -> str:
        return f"item {self.item}: has its own issue #{self.issue} (never filed by artbot)"


@dataclass(frozen=True)
class LinkPreset:
    """Give a pre-existing issue the audit's labels so the one labelled list call sees it."""

    item: int
    issue: int
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"item {self.item}: label #{self.issue} with {', '.join(self.labels)}"


@dataclass(frozen=True)
class LabelTracking:
    """Give the tracking issue the audit's labels and its own, once, so that the labelled
    list returns it and a sync with nothing to do needs no request of its own for it."""

    issue: int
    labels: tuple[str, ...]

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: label it {', '.join(self.labels)}"


@dataclass(frozen=True)
class CreateLabel:
    """A label the issues about to be filed use that does not exist yet."""

    name: str
    color: str | None = None
    description: str | None = None

    def describe(self) -> str:
        return f"create label {self.name!r}"


@dataclass(frozen=True)
class CloseCopies:
    """After filing ``items``: read the list again and close any second issue of one of them
    (a create retried after it had taken effect, or a concurrent run) as a duplicate of the
    lowest number, which every run agrees on without talking to the others."""

    items: tuple[int, ...]

    def describe(self) -> str:
        which = ", ".join(map(str, self.items))
        what = "item" if len(self.items) == 1 else "items"
        return f"{what} {which}: read the list again and close any copy filed meanwhile"


@dataclass(frozen=True)
class EditBody:
    """Set the owned region of #issue's body to ``body`` (applied to the body re-read right
    before: only the region is rewritten, and only when it differs)."""

    item: int
    issue: int
    body: str = field(default="", repr=False)

    def describe(self) -> str:
        return f"item {self.item}: update the artbot part of #{self.issue}'s body"


@dataclass(frozen=True)
class CloseDuplicate:
    item: int
    issue: int
    keep: int

    def describe(self) -> str:
        return f"item {self.item}: close #{self.issue} as a duplicate of #{self.keep}"


@dataclass(frozen=True)
class Duplicate:
    """Reported by sync, which never closes anything."""

    item: int
    issue: int
    keep: int

    def describe(self) -> str:
        return f"item {self.item}: #{self.issue} duplicates #{self.keep} (run `artbot open`)"


@dataclass(frozen=True)
class ReadTracking:
    """Read the tracking issue's body again right before its block is written, so a human's
    edit made meanwhile is kept (:func:`artbot.run.blockwrite.merge`). ``answered``: the write
    right before it is the add of a sub-issue, whose answer is the tracking issue as it is
    then; it is read only when that answer did not come."""

    issue: int
    answered: bool = False

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: read it again before writing the block"


@dataclass(frozen=True)
class UpdateChecklist:
    issue: int
    write: BlockWrite = field(repr=False)

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: update the checklist"


@dataclass(frozen=True)
class ChecklistUpToDate:
    issue: int

    def describe(self) -> str:
        return f"tracking issue #{self.issue}: checklist up to date"


@dataclass(frozen=True)
class Comment:
    """A verification comment on a generated issue (posted once per status change)."""

    item: int
    issue: int
    body: str

    def describe(self) -> str:
        first = self.body.splitlines()[1] if "\n" in self.body else self.body
        return f"item {self.item}: comment on #{self.issue}: {first}"


# What the executor carries out: every action that writes (or may), and the reads the plan
# names. The rest are facts: what the run found, in the plan beside the writes.
Write = (
    CreateLabel
    | LabelTracking
    | LinkPreset
    | Create
    | CloseCopies
    | CloseFixed
    | CloseDuplicate
    | StatusChange
    | CloseWhenFixed
    | EditBody
    | Comment
    | AddSubIssue
    | RemoveSubIssue
    | MoveSubIssue
    | ReadTracking
    | UpdateChecklist
)
Fact = (
    Exists
    | Preset
    | Duplicate
    | Foreign
    | ChecklistUpToDate
    | SubIssueRemovedByHand
    | SubIssueHasParent
    | SubIssuesFull
    | SubIssuesUpToDate
    | NoSubIssues
    | CarryOutRequest
    | RevertTick
    | DropRequest
)
Action = Write | Fact
FACTS: tuple[type, ...] = typing.get_args(Fact)


@dataclass(frozen=True)
class Claims:
    """How an issue list read again during the run is claimed (:mod:`artbot.tracking.ownership`):
    the audit, the logins artbot writes as, and the tracking issue."""

    audit: Audit
    logins: tuple[str, ...]
    tracking: int | None


@dataclass(frozen=True)
class BlockPlan:
    """How the tracking issue's block reads once the plan's writes are done: the checklist
    lines (an item filed by this run gets its number when it is filed: ``filed``), the
    Requests list (``asked``'s ticks, ``done`` cleared; None: every tick kept, pending), the
    sub-issue record as planned, artbot's identity, and what the record is settled from once
    the sub-issue writes are done."""

    entries: tuple[ChecklistEntry, ...]
    filed: tuple[int, ...] = ()
    asked: Asked | None = None
    done: tuple[Request, ...] = ()
    record: SubIssueRecord | None = None
    logins: tuple[str, ...] = ()
    sub_issues: SubIssueStart | None = None


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...] = field(default_factory=tuple)
    block: BlockPlan | None = None  # the block the plan's checklist action writes
    warnings: tuple[str, ...] = ()  # what the planner found worth saying (printed once)
    claims: Claims | None = None

    def of(self, kind: type) -> list[Any]:
        return [a for a in self.actions if isinstance(a, kind)]

    def text(self) -> str:
        return "\n".join(a.describe() for a in self.actions) or "nothing to do"

    def as_json(self) -> list[dict[str, Any]]:
        out = []
        for a in self.actions:
            data = {k: v for k, v in asdict(a).items() if k not in ("body", "write")}
            data["action"] = type(a).__name__
            data["text"] = a.describe()
            out.append(data)
        return out
