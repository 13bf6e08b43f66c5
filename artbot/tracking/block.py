"""The block artbot owns in the tracking issue, as one value: parsed once, rendered once.

Between :data:`~artbot.tracking.checklist.START_MARKER` and ``END_MARKER`` artbot keeps four
things, each with its own line format:

* the checklist lines, one per audit item (written from GitHub and the catalog, never read
  back: what they say is derived, so a line a person edits is simply rewritten);
* the Requests list (:mod:`artbot.tracking.requests`): which requests are ticked, which
  follow-ups' declines were honoured (standing answers), and the note on a reverted tick;
* the sub-issue record (:class:`~artbot.tracking.subissues.SubIssueRecord`);
* artbot's identity, the logins it writes as (:mod:`artbot.tracking.ownership`).

:meth:`TrackingBlock.parse` reads all of them from a body in one pass, and a run reads the
body once, in its observe step; every decision after that reads this value. The text goes
back through :meth:`TrackingBlock.apply`, which replaces the block and keeps every byte
outside it (the rules are :mod:`artbot.tracking.checklist`'s). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .checklist import ChecklistEntry, apply_block, read_block
from .ownership import recorded_logins, with_identity
from .requests import Request, declined, note_in, ticked
from .subissues import SubIssueRecord


@dataclass(frozen=True)
class TrackingBlock:
    """artbot's block in the tracking issue.

    Read from a body (:meth:`parse`): ``text`` is the block as it stands (None when the body
    has none), and ``ticked``, ``declined`` (honoured declines), ``note``, ``record`` and
    ``logins`` what it holds. Built for a
    write: ``entries`` are the checklist lines to render; ``text`` is then what rendering gave.
    """

    text: str | None = None
    entries: tuple[ChecklistEntry, ...] = ()
    ticked: frozenset[Request] = frozenset()
    declined: frozenset[int] = frozenset()
    note: str | None = None
    record: SubIssueRecord | None = None
    logins: tuple[str, ...] = field(default=())

    @classmethod
    def parse(cls, body: str | None) -> TrackingBlock:
        """Everything artbot reads from the tracking issue's body, in one pass. Raises
        :class:`artbot.errors.ChecklistError` on broken markers (nothing is then written)."""
        text = read_block(body)
        return cls(
            text=text,
            ticked=ticked(text),
            declined=declined(text),
            note=note_in(text),
            record=SubIssueRecord.find(text),
            logins=recorded_logins(text),
        )

    @property
    def present(self) -> bool:
        return self.text is not None

    def with_logins(self, logins: Iterable[str]) -> tuple[str, ...]:
        """The identity to record: the block's, then ``logins`` (first seen first)."""
        return tuple(dict.fromkeys((*self.logins, *logins)))


def compose(checklist: str, logins: Sequence[str]) -> str:
    """The block's text: the rendered checklist (lines, Requests, sub-issue record), then the
    identity line."""
    return with_identity(checklist, logins)


def apply(body: str | None, text: str) -> str:
    """``body`` with the block set to ``text``; every byte outside the block kept."""
    return apply_block(body, text)
