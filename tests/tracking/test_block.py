"""The tracking issue's block as one value (artbot/tracking/block.py): parsed once, rendered
once, with the human text outside it kept byte for byte. Properties over what hypothesis draws:
human text around the block, ticks, and the one hidden record (artbot/tracking/record.py: the
logins, the sub-issue record, the note)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from artbot.tracking.block import TrackingBlock, compose
from artbot.tracking.checklist import END_MARKER, START_MARKER, apply_block
from artbot.tracking.record import MAX_LOGINS, Memory, read_record
from artbot.tracking.requests import REASONS, Note, Request
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
notes = st.one_of(
    st.none(),
    st.builds(
        Note,
        st.one_of(st.none(), st.sampled_from(["mallory", "a-b[bot]"])),
        st.sets(st.builds(Request, st.just("file"), st.integers(1, 40)), min_size=1)
        .map(sorted)
        .map(tuple),
        st.sampled_from(REASONS),
    ),
)
logins = st.lists(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,10}(\[bot\])?", fullmatch=True),
    max_size=MAX_LOGINS,
    unique_by=str.casefold,
).map(tuple)
# Human text: anything but artbot's own block markers, which a body holds at most once each.
human = st.text(st.characters(codec="utf-8"), max_size=60).filter(
    lambda t: START_MARKER not in t and END_MARKER not in t and "\r" not in t
)


def block_text(
    ticks: set[Request],
    offered: set[Request],
    record: SubIssueRecord | None,
    who: tuple[str, ...],
    note: Note | None = None,
) -> str:
    """A block as the template writes one: checklist lines, Requests, then the record."""
    lines = ["- [ ] 7. A finding — #1112", "", "**Requests**"]
    for r in sorted(offered | ticks):
        lines.append(f"- [{'x' if r in ticks else ' '}] {r.text} {r.marker}")
    if note is not None:
        lines.append(note.text)
    return compose("\n".join(lines) + "\n", Memory(who, record, note))


@given(
    before=human,
    after=human,
    ticks=requests,
    offered=requests,
    record=records,
    who=logins,
    note=notes,
)
def test_parse_reads_back_what_was_written_and_keeps_the_human_text(
    before: str,
    after: str,
    ticks: set[Request],
    offered: set[Request],
    record: SubIssueRecord | None,
    who: tuple[str, ...],
    note: Note | None,
) -> None:
    body = f"{before}\n\n{after}"
    text = block_text(ticks, offered, record, who, note)
    written = apply_block(body, text)
    block = TrackingBlock.parse(written)
    assert block.text == text
    assert block.ticked == frozenset(ticks)
    assert block.record == record
    assert block.logins == who
    assert block.note == note
    assert text.count("<!-- artbot:record") == (1 if (who or record or note) else 0)
    start, end = written.index(START_MARKER), written.index(END_MARKER) + len(END_MARKER)
    assert (written[:start] + written[end:]).replace("\n", "") == body.replace("\n", "")
    assert apply_block(written, text) == written  # rendered once: writing it again changes nothing
    again = apply_block(written, block_text(set(), offered, record, who))
    assert again[:start] == written[:start]  # a new block never touches the text before it
    assert again[again.index(END_MARKER) :] == written[end - len(END_MARKER) :]


@given(who=logins, more=logins)
def test_the_identity_is_the_blocks_then_the_new_first_seen_first(
    who: tuple[str, ...], more: tuple[str, ...]
) -> None:
    block = TrackingBlock.parse(apply_block("", compose("- [ ] 1. x\n", Memory(who))))
    assert block.with_logins(more) == tuple(dict.fromkeys((*who, *more)))


def test_a_body_without_a_block_parses_empty() -> None:
    assert TrackingBlock.parse("Dedicated issues\n- #1108\n") == TrackingBlock()
    assert not TrackingBlock.parse(None).present
    lines = "- [ ] 1. x\n"
    assert TrackingBlock.parse(apply_block("", lines)) == TrackingBlock(text=lines)


def test_a_block_without_a_record_or_with_one_that_does_not_validate_remembers_nothing() -> None:
    assert read_record(None) == read_record("- [ ] 1. x\n") == Memory()
    for bad in (
        '{"v":2,"logins":["a"]}',  # a version this artbot does not know
        '{"v":1,"logins":["not a login!"]}',
        '{"v":1,"logins":["a","b","c","d","e","f"]}',  # more than MAX_LOGINS
        '{"v":1,"sub_issues":{"added":[0]}}',
        '{"v":1,"note":{"requests":[]}}',
        '{"v":1,"note":{"requests":["file=5"],"why":"because"}}',
        '{"v":1,"extra":1}',
        "{not json}",
    ):
        assert read_record(f"<!-- artbot:record {bad} -->\n") == Memory(), bad
