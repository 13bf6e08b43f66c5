"""The block artbot owns in the tracking issue, as one value: parsed once, rendered once.

What the block holds is docs/design.md's "the tracking issue's block". :meth:`TrackingBlock.parse`
reads all of it from a body in one pass, and a run reads the body once, in its observe step;
every decision after that reads this value. The text goes back through
:func:`artbot.tracking.checklist.apply_block`, which replaces the block and keeps every byte
outside it (the rules are that module's). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .checklist import read_block
from .record import Memory, read_record
from .requests import Note, Request, declined, ticked
from .subissues import SubIssueRecord


@dataclass(frozen=True)
class TrackingBlock:
    """artbot's block in the tracking issue, read from a body (:meth:`parse`): ``text`` is the
    block as it stands (None when the body has none), ``ticked`` and ``declined`` (honoured
    declines) its tick boxes, and ``note``, ``record`` and ``logins`` what its record holds."""

    text: str | None = None
    ticked: frozenset[Request] = frozenset()
    declined: frozenset[int] = frozenset()
    note: Note | None = None
    record: SubIssueRecord | None = None
    logins: tuple[str, ...] = field(default=())

    @classmethod
    def parse(cls, body: str | None) -> TrackingBlock:
        """Everything artbot reads from the tracking issue's body, in one pass. Raises
        :class:`artbot.errors.ChecklistError` on broken markers (nothing is then written)."""
        text = read_block(body)
        memory = read_record(text)
        return cls(
            text=text,
            ticked=ticked(text),
            declined=declined(text),
            note=memory.note,
            record=memory.sub_issues,
            logins=memory.logins,
        )

    @property
    def present(self) -> bool:
        return self.text is not None

    def with_logins(self, logins: Iterable[str]) -> tuple[str, ...]:
        """The logins to record: the block's, then ``logins`` (first seen first)."""
        return tuple(dict.fromkeys((*self.logins, *logins)))


def compose(checklist: str, memory: Memory, items: Mapping[int, int] | None = None) -> str:
    """The block's text: the rendered checklist (lines, Requests), a note for each item's
    issue (``items``: issue -> item, in checklist order) a person removed from the sub-issues
    or that has another parent, then the record."""
    record, items = memory.sub_issues, items or {}
    notes = []
    if record is not None:
        parents = record.parents
        notes += [
            f"_Sub-issues: #{n} (item {item}) was removed from this issue's sub-issues by hand, "
            "so artbot leaves it out; add it back to have it tracked again._"
            for n, item in items.items()
            if n in record.removed
        ]
        notes += [
            f"_Sub-issues: #{n} (item {item}) already has the parent issue {parents[n]}, so "
            "artbot did not move it (`artbot sync --replace-parent` would)._"
            for n, item in items.items()
            if n in parents
        ]
    line = memory.line()
    tail = "".join(f"\n{note}\n" for note in notes) + (f"\n{line}\n" if line else "")
    if not tail:
        return checklist
    return checklist.rstrip("\n") + "\n" + tail
