"""The tracking issue's block as one value (artbot/tracking/block.py): parsed once, rendered
once, with the human text outside it kept byte for byte. Properties over what hypothesis draws:
human text around the block, ticks, the sub-issue record and the identity."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from artbot.tracking.block import TrackingBlock, apply, compose
from artbot.tracking.checklist import END_MARKER, START_MARKER
from artbot.tracking.ownership import MAX_IDENTITIES
from artbot.tracking.requests import Request, revert_note
from artbot.tracking.subissues import SubIssueRecord

numbers = st.lists(st.integers(1, 99_999), max_size=4, unique=True).map(tuple)
records = st.one_of(
    st.none(),
    st.builds(
        SubIssueRecord,
        numbers,
        numbers,
        st.lists(st.tuples(st.integers(1, 9999), st.sampled_from(["#12", "o/r#3"])), max_size=2)
        .map(dict)
        .map(lambda d: tuple(d.items())),
        st.integers(0, 50),
    ),
)
requests = st.sets(
    st.one_of(st.just(Request("recheck")), st.builds(Request, st.just("file"), st.integers(1, 40)))
)
logins = st.lists(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,10}(\[bot\])?", fullmatch=True),
    max_size=MAX_IDENTITIES,
    unique_by=str.casefold,
).map(tuple)
# Human text: anything but artbot's own block markers, which a body holds at most once each.
human = st.text(st.characters(codec="utf-8"), max_size=60).filter(
    lambda t: START_MARKER not in t and END_MARKER not in t and "\r" not in t
)


def block_text(
    ticks: set[Request], offered: set[Request], record: SubIssueRecord | None, who: tuple[str, ...]
) -> str:
    """A block as the template writes one: checklist lines, Requests, record, then identity."""
    lines = ["- [ ] 7. A finding — #1112", "", "**Requests**"]
    for r in sorted(offered | ticks):
        lines.append(f"- [{'x' if r in ticks else ' '}] {r.text} {r.marker}")
    if record is not None:
        lines.append(str(record))
    return compose("\n".join(lines) + "\n", who)


@given(
    before=human,
    after=human,
    ticks=requests,
    offered=requests,
    record=records,
    who=logins,
)
def test_parse_reads_back_what_was_written_and_keeps_the_human_text(
    before: str,
    after: str,
    ticks: set[Request],
    offered: set[Request],
    record: SubIssueRecord | None,
    who: tuple[str, ...],
) -> None:
    body = f"{before}\n\n{after}"
    text = block_text(ticks, offered, record, who)
    written = apply(body, text)
    block = TrackingBlock.parse(written)
    assert block.text == text
    assert block.ticked == frozenset(ticks)
    assert block.record == record
    assert block.logins == who
    start, end = written.index(START_MARKER), written.index(END_MARKER) + len(END_MARKER)
    assert (written[:start] + written[end:]).replace("\n", "") == body.replace("\n", "")
    assert apply(written, text) == written  # rendered once: writing it again changes nothing
    again = apply(written, block_text(set(), offered, record, who))
    assert again[:start] == written[:start]  # a new block never touches the text before it
    assert again[again.index(END_MARKER) :] == written[end - len(END_MARKER) :]


@given(who=logins, more=logins)
def test_the_identity_is_the_blocks_then_the_new_first_seen_first(
    who: tuple[str, ...], more: tuple[str, ...]
) -> None:
    block = TrackingBlock.parse(apply("", compose("- [ ] 1. x\n", who)))
    assert block.with_logins(more) == tuple(dict.fromkeys((*who, *more)))


def test_a_body_without_a_block_parses_empty_and_a_revert_note_is_read() -> None:
    assert TrackingBlock.parse("Dedicated issues\n- #1108\n") == TrackingBlock()
    assert not TrackingBlock.parse(None).present
    note = revert_note("mallory", [Request("file", 5)])
    block = TrackingBlock.parse(apply("", f"- [ ] 1. x\n{note}\n"))
    assert block.note == note and block.present
