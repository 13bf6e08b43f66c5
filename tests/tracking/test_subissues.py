"""The sub-issue planner (artbot.tracking.subissues): pure, so its rules are checked on every
shape of list and record hypothesis can draw, against a small imitation of how GitHub carries out
adds, removes and moves."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from hypothesis import assume, given
from hypothesis import strategies as st

from artbot.records.observed import SubIssuesSummary
from artbot.tracking.record import Memory, read_record
from artbot.tracking.subissues import (
    MAX_SUB_ISSUES,
    AddSubIssue,
    MoveSubIssue,
    RemoveSubIssue,
    SubIssueAction,
    SubIssueDone,
    SubIssuePlan,
    SubIssueRecord,
    SubIssueRemovedByHand,
    SubIssuesFull,
    SubIssueStart,
    SubIssuesUpToDate,
    Wanted,
    apply_moves,
    moves,
    needs_list,
    parent_ref,
    plan_sub_issues,
    settle,
)

TRACKING = 1111
WRITES = (AddSubIssue, RemoveSubIssue, MoveSubIssue)


def carry(listed: Sequence[int], plan: SubIssuePlan) -> list[int]:
    """``listed`` after GitHub carries out the plan's writes (an add appends to the end)."""
    out = list(listed)
    for action in plan.actions:
        if isinstance(action, RemoveSubIssue):
            out.remove(action.issue)
        elif isinstance(action, AddSubIssue):
            assert action.issue is not None
            out.append(action.issue)
        elif isinstance(action, MoveSubIssue):
            out = apply_moves(out, [(action.issue, action.after, action.before)])
    return out


Write = AddSubIssue | RemoveSubIssue | MoveSubIssue


def writes(actions: Sequence[SubIssueAction]) -> list[Write]:
    return [a for a in actions if isinstance(a, WRITES)]


def summary(total: int) -> SubIssuesSummary:
    return SubIssuesSummary(total, 0, 0)


def lis_length(values: Sequence[int]) -> int:
    """Patience sorting: an independent count of the longest increasing run."""
    tails: list[int] = []
    for v in values:
        at = bisect.bisect_left(tails, v)
        tails[at : at + 1] = [v]
    return len(tails)


# --- the record ---------------------------------------------------------------------------

numbers = st.integers(min_value=1, max_value=99_999)
_NAME = "[a-z][A-Za-z0-9_.-]{0,8}"
parents = st.one_of(
    numbers.map(lambda n: f"#{n}"),
    st.tuples(
        st.from_regex(r"[a-z][A-Za-z0-9_.-]{0,8}/[a-z][A-Za-z0-9_.-]{0,8}", fullmatch=True), numbers
    ).map(lambda p: f"{p[0]}#{p[1]}"),
)
records = st.builds(
    SubIssueRecord,
    st.lists(numbers, unique=True, max_size=12).map(tuple),
    st.lists(numbers, unique=True, max_size=4).map(tuple),
    st.lists(st.tuples(numbers, parents), max_size=3, unique_by=lambda p: p[0]).map(tuple),
    st.integers(min_value=0, max_value=MAX_SUB_ISSUES),
)


@given(records, st.text(max_size=40).filter(lambda t: "<!--" not in t))
def test_the_record_reads_back_from_the_block(record: SubIssueRecord, text: str) -> None:
    block = f"- [ ] 1. An item — #1108\n{text}\n{Memory(sub_issues=record).line()}\n"
    assert read_record(block).sub_issues == record


def test_a_block_without_a_record_or_with_a_mangled_one_has_none() -> None:
    assert read_record(None).sub_issues is None
    assert read_record("- [ ] 1. An item\n").sub_issues is None
    mangled = '<!-- artbot:record {"v":1,"sub_issues":{"added":[1,"x"]}} -->'
    assert read_record(mangled).sub_issues is None
    wrong = '<!-- artbot:record {"v":1,"sub_issues":{"elsewhere":[[5,"nowhere"]]}} -->'
    assert read_record(wrong).sub_issues is None


def test_open_appends_what_it_added_and_forgets_a_removal_undone() -> None:
    record = SubIssueRecord(added=(1108,), removed=(1113,), others=1)
    assert record.with_added([1112, 1113, 1108]) == SubIssueRecord((1108, 1112, 1113), (), (), 1)


def test_a_parent_in_another_repository_is_named_with_it() -> None:
    assert parent_ref("OpenPipe/ART", 900, "openpipe/art") == "#900"
    assert parent_ref("OpenPipe/other", 900, "OpenPipe/ART") == "OpenPipe/other#900"


# --- moves ----------------------------------------------------------------------------------


@st.composite
def orders(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """(a list of sub-issues, the ones of them to put in a given order)."""
    mine = draw(st.lists(st.integers(1, 60), unique=True, max_size=15))
    foreign = draw(st.lists(st.integers(1000, 1020), unique=True, max_size=5))
    order = draw(st.permutations(mine + foreign))
    return list(order), list(draw(st.permutations(mine)))


@given(orders())
def test_moves_put_the_desired_issues_in_order_with_the_fewest_moves(
    case: tuple[list[int], list[int]],
) -> None:
    order, desired = case
    planned = moves(order, desired)
    after = apply_moves(order, planned)
    assert [n for n in after if n in desired] == desired
    foreign = [n for n in order if n not in desired]
    assert [n for n in after if n not in desired] == foreign  # never moved
    assert {issue for issue, _, _ in planned}.isdisjoint(foreign)
    rank = {n: i for i, n in enumerate(desired)}
    # Fewest possible: everything outside one longest run already in order must move.
    assert len(planned) == len(desired) - lis_length([rank[n] for n in order if n in rank])
    assert all((a is None) != (b is None) for _, a, b in planned)


def test_the_done_when_order_takes_two_moves() -> None:
    # open --item 7, open --item 8, then sync adds #1108-#1110 at the end.
    order = [1112, 1113, 1108, 1109, 1110]
    assert moves(order, [1108, 1109, 1110, 1112, 1113]) == [
        (1112, 1110, None),
        (1113, 1112, None),
    ]
    assert moves([2, 1], [1, 2]) in ([(2, 1, None)], [(1, None, 2)])


# --- the plan ------------------------------------------------------------------------------


@st.composite
def situations(draw: st.DrawFn) -> tuple[list[Wanted], list[int], SubIssueRecord]:
    """Wanted issues, the list as GitHub has it, and a record: drawn independently, so the
    record may be stale in every way (a person added, removed or reordered meanwhile)."""
    wanted_numbers = draw(st.lists(st.integers(1, 80), unique=True, max_size=20))
    wanted = [Wanted(k + 1, n) for k, n in enumerate(wanted_numbers)]
    foreign = draw(st.lists(st.integers(1000, 1010), unique=True, max_size=4))
    pool = wanted_numbers + foreign + draw(st.lists(st.integers(81, 99), unique=True, max_size=3))
    listed = draw(
        st.permutations(draw(st.lists(st.sampled_from(pool), unique=True)) if pool else [])
    )
    recorded = draw(st.lists(st.sampled_from(pool), unique=True)) if pool else []
    split = draw(st.integers(0, len(recorded)))
    rest = [n for n in wanted_numbers if n not in recorded]
    away = draw(st.lists(st.sampled_from(rest), unique=True, max_size=3)) if rest else []
    record = SubIssueRecord(
        tuple(recorded[:split]),
        tuple(recorded[split:]),
        tuple((n, "#900") for n in away),
        draw(st.integers(0, 5)),
    )
    return wanted, list(listed), record


@given(situations(), st.booleans())
def test_a_plan_converges_and_respects_people(
    case: tuple[list[Wanted], list[int], SubIssueRecord], replace_parent: bool
) -> None:
    wanted, listed, record = case
    plan = plan_sub_issues(TRACKING, wanted, listed, record, replace_parent=replace_parent)
    after = carry(listed, plan)
    numbers = [w.number for w in wanted]

    assert len(after) == len(set(after)) <= MAX_SUB_ISSUES  # each once, never past the cap
    assert [n for n in after if n in numbers] == [n for n in numbers if n in after]  # item order
    foreign = [n for n in listed if n not in numbers and n not in record.added]
    assert [n for n in after if n in foreign] == foreign  # a person's sub-issues stay put
    added = {a.issue for a in plan.actions if isinstance(a, AddSubIssue)}
    assert added.isdisjoint(listed)
    # Never re-added: what a person removed (now or before) ...
    assert added.isdisjoint(set(record.removed) | (set(record.added) - set(listed)))
    removed_now = {a.issue for a in plan.actions if isinstance(a, SubIssueRemovedByHand)}
    assert removed_now == {n for n in numbers if n in record.added and n not in listed}
    # ... and, unless asked, what has another parent.
    if not replace_parent:
        assert added.isdisjoint(record.parents)
    assert set(plan.record.added) == {n for n in after if n in numbers}
    assert list(plan.record.added) == [n for n in after if n in numbers]

    # Nothing changes meanwhile: the next sync reads no list, and a list read writes nothing.
    again = plan_sub_issues(TRACKING, wanted, after, plan.record, replace_parent=replace_parent)
    assert writes(again.actions) == [] and again.record == plan.record
    assert not needs_list(wanted, plan.record, summary(len(after)))


# --- settling: the record as the writes turned out (artbot.run.execute keeps what each came to)


@given(situations())
def test_when_every_write_goes_through_the_record_settles_as_planned(
    case: tuple[list[Wanted], list[int], SubIssueRecord],
) -> None:
    wanted, listed, record = case
    plan = plan_sub_issues(TRACKING, wanted, listed, record)
    done = [SubIssueDone(a, True) for a in writes(plan.actions)]
    start = SubIssueStart(TRACKING, plan.record, record, tuple(listed), in_step=True)
    assert settle(start, done, {}, None) == plan.record


def sent_but(
    listed: Sequence[int], plan: SubIssuePlan, refused: int
) -> tuple[list[int], list[SubIssueDone]]:
    """GitHub's list after the plan's writes as the executor sends them when GitHub refuses
    the add of ``refused`` (it has another parent): a planned move that names it is not
    sent. With what each write came to."""
    out, done = list(listed), list[SubIssueDone]()
    for a in writes(plan.actions):
        if isinstance(a, AddSubIssue) and a.issue == refused:
            done.append(SubIssueDone(a, False, "#900"))
            continue
        if isinstance(a, MoveSubIssue) and refused in (a.issue, a.after, a.before):
            continue
        out = carry(out, SubIssuePlan((a,)))
        done.append(SubIssueDone(a, True))
    return out, done


@given(situations(), st.data())
def test_a_refused_add_is_left_out_of_the_record_and_the_next_sync_settles_the_order(
    case: tuple[list[Wanted], list[int], SubIssueRecord], data: st.DataObject
) -> None:
    wanted, listed, record = case
    plan = plan_sub_issues(TRACKING, wanted, listed, record)
    adds = [a.issue for a in plan.actions if isinstance(a, AddSubIssue) and a.issue]
    assume(adds)
    refused: int = data.draw(st.sampled_from([n for n in adds if n is not None]))
    after, done = sent_but(listed, plan, refused)
    start = SubIssueStart(TRACKING, plan.record, record, tuple(listed), in_step=True)
    settled = settle(start, done, {}, None)
    assert settled is not None
    numbers = [w.number for w in wanted]
    # The record holds what GitHub has, in its order, and the other parent it was refused for.
    assert list(settled.added) == [n for n in after if n in numbers]
    assert settled.parents[refused] == "#900"
    # The next sync sees whether anything is out of order, and puts it right without the add.
    in_order = list(settled.added) == [n for n in numbers if n in settled.added]
    assert needs_list(wanted, settled, summary(len(after))) or in_order
    again = plan_sub_issues(TRACKING, wanted, after, settled)
    final = carry(after, again)
    assert refused not in final
    assert [n for n in final if n in numbers] == [n for n in numbers if n in final]


def test_open_settles_on_the_record_read_again_with_what_it_filed_and_added() -> None:
    fresh = SubIssueRecord(added=(1108, 1109), others=1)  # as re-read: a person's sync since
    start = SubIssueStart(TRACKING, SubIssueRecord(added=(1108,)), SubIssueRecord(added=(1108,)))
    add = AddSubIssue(7, 1200, TRACKING)
    assert settle(start, [SubIssueDone(add, True, filed=True)], {7: 1200}, fresh) == (
        SubIssueRecord(added=(1108, 1109, 1200), others=1)
    )
    assert settle(start, [SubIssueDone(add, False, filed=True)], {7: 1200}, fresh) == fresh
    assert settle(start, [], {}, fresh, unavailable=True) == fresh


def test_the_done_when_scenario_step_by_step() -> None:
    wanted = [Wanted(1, 1108), Wanted(2, 1109), Wanted(3, 1110), Wanted(7, 1112), Wanted(8, 1113)]
    record = SubIssueRecord(added=(1112, 1113))  # what open --item 7 and --item 8 recorded
    assert needs_list(wanted, record, summary(2))  # #1108-#1110 are not accounted for
    first = plan_sub_issues(TRACKING, wanted, [1112, 1113], record)
    assert [a.describe() for a in writes(first.actions)] == [
        "item 1: add #1108 to #1111's sub-issues",
        "item 2: add #1109 to #1111's sub-issues",
        "item 3: add #1110 to #1111's sub-issues",
        "item 7: move #1112 after #1110 in #1111's sub-issues",
        "item 8: move #1113 after #1112 in #1111's sub-issues",
    ]
    now = carry([1112, 1113], first)
    assert now == [1108, 1109, 1110, 1112, 1113]
    assert not needs_list(wanted, first.record, summary(5))  # the second sync reads no list

    # A person removes #1113: the summary drops to 4, so the list is read once.
    assert needs_list(wanted, first.record, summary(4))
    second = plan_sub_issues(TRACKING, wanted, now[:4], first.record)
    assert second.actions == (
        SubIssueRemovedByHand(8, 1113, TRACKING),
        SubIssuesUpToDate(TRACKING),
    )
    assert second.record == SubIssueRecord((1108, 1109, 1110, 1112), (1113,))
    assert not needs_list(wanted, second.record, summary(4))
    # The person adds it back: artbot records it as its own again.
    back = plan_sub_issues(TRACKING, wanted, [*now[:4], 1113], second.record)
    assert writes(back.actions) == [] and back.record == first.record


def test_a_duplicate_artbot_added_is_removed_and_other_sub_issues_are_counted() -> None:
    wanted = [Wanted(7, 1112)]
    record = SubIssueRecord(added=(1112, 1120))  # 1120: a duplicate of item 7, since closed
    plan = plan_sub_issues(TRACKING, wanted, [1112, 777, 1120], record)
    assert writes(plan.actions) == [RemoveSubIssue(1120, TRACKING)]
    assert plan.record == SubIssueRecord(added=(1112,), others=1)


def test_adds_stop_at_githubs_cap_and_say_which_were_left_out() -> None:
    full = list(range(2000, 2000 + MAX_SUB_ISSUES - 1))  # one place left
    wanted = [Wanted(1, 1108), Wanted(2, 1109)]
    plan = plan_sub_issues(TRACKING, wanted, full, None)
    assert [a.issue for a in plan.actions if isinstance(a, AddSubIssue)] == [1108]
    assert SubIssuesFull(TRACKING, (1109,)) in plan.actions
    assert needs_list(wanted, plan.record, summary(MAX_SUB_ISSUES))  # 1109 still unaccounted


def test_replace_parent_moves_what_was_reported() -> None:
    wanted = [Wanted(2, 1109)]
    record = SubIssueRecord(elsewhere=((1109, "#900"),))
    assert not needs_list(wanted, record, summary(0))
    kept = plan_sub_issues(TRACKING, wanted, [], record)
    assert writes(kept.actions) == [] and kept.record == record
    assert needs_list(wanted, record, summary(0), replace_parent=True)
    moved = plan_sub_issues(TRACKING, wanted, [], record, replace_parent=True)
    assert writes(moved.actions) == [AddSubIssue(2, 1109, TRACKING, replace_parent=True)]
    assert moved.record == SubIssueRecord(added=(1109,))


def test_every_action_describes_itself() -> None:
    actions: list[SubIssueAction] = [
        AddSubIssue(7, None, TRACKING),
        MoveSubIssue(1, 1108, TRACKING, before=1112),
        RemoveSubIssue(1120, TRACKING),
        SubIssuesFull(TRACKING, (1109,)),
    ]
    texts = [a.describe() for a in actions]
    assert texts[0] == "item 7: add the new issue to #1111's sub-issues"
    assert texts[1] == "item 1: move #1108 before #1112 in #1111's sub-issues"
    assert "#1120" in texts[2] and "#1109 left out" in texts[3]
