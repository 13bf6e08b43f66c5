"""The Requests list of the tracking issue (artbot/tracking/requests.py): pure, with properties."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from artbot.records.catalog import load_catalog
from artbot.render.issue import render_checklist
from artbot.tracking.block import TrackingBlock, compose
from artbot.tracking.checklist import END_MARKER as END
from artbot.tracking.checklist import START_MARKER as START
from artbot.tracking.checklist import ChecklistEntry
from artbot.tracking.record import Memory
from artbot.tracking.requests import (
    EditEvent,
    Note,
    Request,
    offered,
    panel,
    revert_note,
    sort_ticks,
    ticked,
)
from tests.helpers.shipped import ISSUE_ITEMS

REPO = Path(__file__).resolve().parents[2]
CATALOG = load_catalog(REPO)


def entries(filed: set[int]) -> list[ChecklistEntry]:
    """Items 1-3 preset, the others filed when in ``filed``."""
    out = []
    for f in CATALOG.findings:
        number = f.issue or (1111 + f.item if f.item in filed else None)
        out.append(ChecklistEntry(f.item, f.title, number, "open" if number else None, None))
    return out


def block(
    filed: set[int], keep: frozenset[Request] | set[Request] = frozenset(), note: Note | None = None
) -> str:
    es = entries(filed)
    text = render_checklist(es, CATALOG.audit, REPO / "templates", panel(es, keep, note))
    return compose(text, Memory(note=note))


def note_in(text: str) -> Note | None:
    return TrackingBlock.parse(f"{START}\n{text}{END}").note


def test_every_item_without_an_issue_is_offered_and_a_recheck_always() -> None:
    filed = set(ISSUE_ITEMS[:2])
    got = offered(entries(filed))
    assert [r.key for r in got] == [f"file={n}" for n in ISSUE_ITEMS[2:]] + ["recheck"]
    text = block(filed)
    n = ISSUE_ITEMS[2]
    assert f"- [ ] File the issue for item {n} <!-- artbot:request file={n} -->" in text
    assert "- [ ] Re-check against the newest release <!-- artbot:request recheck -->" in text
    assert all(f"file={m} " not in text for m in filed)
    assert not [f for f in CATALOG.findings if f.issue and f"file={f.item} " in text]


@given(st.sets(st.sampled_from(ISSUE_ITEMS)), st.data())
def test_what_is_rendered_ticked_reads_back_ticked(filed: set[int], data: st.DataObject) -> None:
    wanted = list(offered(entries(filed)))
    keep = set(data.draw(st.lists(st.sampled_from(wanted), unique=True)))
    assert ticked(block(filed, keep)) == keep


def test_the_marker_names_the_request_not_the_words() -> None:
    text = block(set()).replace(
        "- [ ] File the issue for item 5 <!-- artbot:request file=5 -->",
        "- [x] please file five <!-- artbot:request file=5 -->",
    )
    assert ticked(text) == {Request("file", 5)}
    # A ticked line without a marker, or a marker in running text, is no request.
    assert ticked("- [x] File the issue for item 6\nsee <!-- artbot:request file=6 -->") == set()
    # Hostile variants: a huge number, a marker with extra words, a tick inside a fence's
    # text still needs the exact marker form.
    assert ticked("- [x] x <!-- artbot:request file=99999999 -->") == set()
    assert ticked("- [x] x <!-- artbot:request file=5 evil -->") == set()
    assert ticked("- [X] x <!-- artbot:request recheck -->\r\n") == {Request("recheck")}


@pytest.mark.parametrize(
    "line",
    [
        "- [x] a <!-- artbot:request file=5 -->",
        "* [x] a <!-- artbot:request file=5 -->",
        "+ [X] a <!-- artbot:request file=5 -->",
        "-  [x] a <!-- artbot:request file=5 -->",
        "\t- [x] a <!-- artbot:request file=5 -->",
        "        - [x] a <!-- artbot:request file=5 -->",
        "> - [x] a <!-- artbot:request file=5 -->",
        "1. [x] a <!-- artbot:request file=5 -->",
        "2) [x]\ta <!-- artbot:request file=5 -->",
    ],
)
def test_every_form_github_renders_as_a_ticked_box_is_one_tick(line: str) -> None:
    assert ticked(line) == {Request("file", 5)}
    assert ticked(line.replace("[x]", "[ ]").replace("[X]", "[ ]")) == set()


def test_an_edit_ticks_only_what_its_new_body_adds_to_the_old() -> None:
    old = block(set(), keep={Request("recheck")})
    new = old.replace("- [ ] File the issue for item 5", "- [x] File the issue for item 5")
    payload = {
        "issue": {"number": 1111, "body": f"text\n{START}\n{new}{END}\n"},
        "sender": {"login": "octo-cat"},
        "changes": {"body": {"from": f"text\n{START}\n{old}{END}\n"}},
    }
    event = EditEvent.from_payload(payload)
    assert event.added == {Request("file", 5)}  # the re-check was ticked before this edit
    untouched = {**payload, "changes": {"title": {"from": "old title"}}}
    assert EditEvent.from_payload(untouched).added == frozenset()


def test_without_an_edit_nothing_is_carried_and_every_tick_is_cleared() -> None:
    es = entries(set())
    now = {Request("file", 5), Request("recheck")}
    scheduled = sort_ticks(1111, now, es)
    assert scheduled.carry == () and set(scheduled.revert) == now
    note = scheduled.panel_for(es, now, None, done=[]).note
    assert note == Note(None, tuple(sorted(now)), "unattributed") and "tick it again" in note.text
    assert note.text == revert_note(None, sorted(now), "unattributed")
    writer = sort_ticks(1111, now, es, sender="maint", added={Request("recheck")})
    assert writer.carry == (Request("recheck"),) and writer.revert == (Request("file", 5),)
    unknown = sort_ticks(1111, now, es, sender="maint", may_write=False, why="unchecked")
    shown = unknown.panel_for(es, now, None, done=[]).note
    assert unknown.carry == () and shown is not None and "did not say whether @maint" in shown.text


def test_a_tick_that_no_longer_applies_is_dropped_and_the_rest_carried() -> None:
    es = entries({5})
    text = "- [x] a <!-- artbot:request file=5 -->\n- [x] b <!-- artbot:request file=6 -->\n"
    asked = sort_ticks(1111, ticked(text), es, sender="maint", added=ticked(text))
    assert asked.drop == (Request("file", 5),)
    assert asked.carry == (Request("file", 6),)
    assert asked.files() == [6] and not asked.recheck


def test_an_edit_by_someone_without_write_access_reverts_every_tick() -> None:
    # Every tick, not only this edit's: a queued run GitHub dropped may have carried an
    # earlier tick by the same person, which would otherwise pass as someone else's.
    es = entries(set())
    now = "- [x] r <!-- artbot:request recheck -->\n- [x] f <!-- artbot:request file=5 -->\n"
    asked = sort_ticks(1111, ticked(now), es, sender="mallory", may_write=False)
    assert asked.revert == (Request("file", 5), Request("recheck"))
    assert asked.carry == ()
    shown = asked.panel_for(es, ticked(now), note_in(now), done=[])
    assert not [line for line in shown.lines if line.ticked]
    assert shown.note is not None and shown.note.text == revert_note("mallory", asked.revert)
    assert "@mallory" in shown.note.text and "write access" in shown.note.text


def test_the_revert_note_stays_until_a_request_is_carried_out() -> None:
    note = Note("mallory", (Request("file", 5),))
    text = block(set(), note=note)
    assert note_in(text) == note and note.text in text
    es = entries(set())
    kept = sort_ticks(1111, ticked(text), es).panel_for(es, ticked(text), note_in(text), done=[])
    assert kept.note == note
    ticked_text = text.replace("- [ ] Re-check", "- [x] Re-check")
    asked = sort_ticks(1111, ticked(ticked_text), es, sender="maint", added=ticked(ticked_text))
    done = asked.panel_for(es, ticked(ticked_text), note_in(ticked_text), done=[Request("recheck")])
    assert done.note is None


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"issue": {"number": "1111"}, "sender": {"login": "a"}},
        {"issue": {"number": 1111}, "sender": {"login": "a b"}},
        {"issue": {"number": 1111}, "sender": {"login": "-bad"}},
        {"issue": {"number": True}, "sender": {"login": "a"}},
        [],
    ],
)
def test_a_malformed_event_is_refused(payload: object) -> None:
    with pytest.raises(ValueError):
        EditEvent.from_payload(payload)  # type: ignore[arg-type]


def test_an_event_is_read_for_its_issue_and_sender() -> None:
    event = EditEvent.from_payload(
        {
            "issue": {"number": 1111},
            "sender": {"login": "octo-cat"},
            "changes": {"body": {"from": "old"}},
        }
    )
    assert event == EditEvent(1111, "octo-cat")
    assert EditEvent.from_payload(
        {"issue": {"number": 7}, "sender": {"login": "github-actions[bot]"}, "changes": {}}
    ) == EditEvent(7, "github-actions[bot]")
