"""The one write of the tracking issue's block: planned complete, merged with the body read
right before it. Pure: no I/O, no rendering.

The block is rendered once, after planning (:func:`artbot.run.commands.run`), into a
:class:`BlockWrite`. What the plan cannot know yet is a reference in it, which :func:`merge`
looks up: the number of an issue filed earlier in the run (written as ``#`` :func:`ref`),
and the sub-issue record as the sub-issue writes turned out (a refused add, another parent).
The body is re-read right before the write (GitHub has no compare-and-swap for issue
bodies): when a person edited the block meanwhile, their ticks are kept, but for those this
write clears (carried out, reverted, dropped), and a "Declined" line they unticked stays
unticked (the answer taken back).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..tracking.block import TrackingBlock, compose
from ..tracking.checklist import apply_block, read_block
from ..tracking.record import Memory, read_record
from ..tracking.requests import DECLINED_RE, MARKER_RE, TASK, Request
from ..tracking.subissues import REF, SubIssueDone, SubIssueStart, settle

_TICK_RE = re.compile(rf"^({TASK})([ xX])(\].*)$")


def ref(item: int) -> int:
    """How the planned block names the issue ``item`` gets when this run files it."""
    return REF + item


@dataclass(frozen=True)
class BlockWrite:
    """The block as planned: ``text`` (issues filed this run as :func:`ref`), the block as
    observe read it, the items filed, the ticks this write clears, ``items`` (issue ->
    item, in checklist order: the sub-issue notes are written again from the record), and
    what the sub-issue record is settled from once the writes before it are done."""

    text: str
    observed: str | None
    filed: tuple[int, ...] = ()
    cleared: frozenset[Request] = frozenset()
    items: tuple[tuple[int, int], ...] = ()
    sub_issues: SubIssueStart | None = None


def merge(
    write: BlockWrite,
    body: str | None,
    numbers: Mapping[int, int],
    done: Sequence[SubIssueDone] = (),
    *,
    unavailable: bool = False,
) -> tuple[str, str]:
    """(the block's text, the body to write): ``write`` with the references looked up
    (``numbers``: item -> issue filed; ``done``: the sub-issue writes as they turned out;
    ``unavailable``: one found that this GitHub has none), applied to ``body`` as just read."""
    # Parsed again only when a person edited the block since observe read it.
    fresh = None if read_block(body) == write.observed else TrackingBlock.parse(body)
    named = {ref(item): numbers[item] for item in write.filed if item in numbers}
    text = re.sub(
        rf"(?<!\d)({'|'.join(str(n) for n in named)})(?!\d)" if named else r"(?!x)x",
        lambda m: str(named[int(m[1])]),
        write.text,
    )
    memory = read_record(text)
    now = fresh.record if fresh is not None else memory.sub_issues
    start = write.sub_issues
    record = memory.sub_issues
    if start is not None:
        record = settle(start, done, numbers, now, unavailable=unavailable)
    if record != memory.sub_issues:
        items = {named.get(n, n): i for n, i in write.items}
        checklist = text[: _tail(text)]
        text = compose(checklist, Memory(memory.logins, record, memory.note), items)
    if fresh is not None:  # edited meanwhile: keep a person's ticks
        text = _retick(text, fresh, write.cleared)
    return text, apply_block(body, text)


def _tail(text: str) -> int:
    """Where the sub-issue notes and the record start in a composed block."""
    at = [text.find(s) for s in ("\n_Sub-issues: ", "\n<!-- artbot:record ") if s in text]
    return min(at) + 1 if at else len(text)


def _retick(text: str, fresh: TrackingBlock, cleared: frozenset[Request]) -> str:
    keep = set(fresh.ticked) - cleared
    shown = {int(n) for n in DECLINED_RE.findall(fresh.text or "")}
    out = []
    for line in text.split("\n"):
        m = _TICK_RE.match(line)
        request = MARKER_RE.search(line)
        declined = DECLINED_RE.search(line)
        if m and request:
            box = "x" if Request.from_key(request[1]) in keep else " "
            line = m[1] + box + m[3]
        elif m and declined and int(declined[1]) in shown - fresh.declined:
            line = m[1] + " " + m[3]
        out.append(line)
    return "\n".join(out)
