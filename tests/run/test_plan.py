"""The planner: desired vs observed state, pure (no repository at all).

The whole run (observe, plan, carry out) is tested over HTTP against the sandbox in
run/test_run_line.py, run/test_open_sync.py and run/test_subissue_writes.py.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.records.marker import IssueMarker
from artbot.records.observed import ObservedIssue
from artbot.render.prepare import render_all
from artbot.run.actions import (
    ChecklistUpToDate,
    CloseDuplicate,
    Create,
    Duplicate,
    EditBody,
    Exists,
    LinkPreset,
    Plan,
    Preset,
    ReadTracking,
    UpdateChecklist,
)
from artbot.run.issues import canonical, checklist_entries
from artbot.run.observe import Scope, Snapshot
from artbot.run.plan import Want, plan_block, plan_run
from artbot.tracking.block import TrackingBlock

ROOT = Path(__file__).resolve().parents[2]
TRACKING = 1111


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


def tracking_issue(number: int = TRACKING) -> ObservedIssue:
    return ObservedIssue(number, "Numerics audit", "", "open", None, "", (), None)


def plan_open(
    findings: Any, rendered: Any, observed: Any, audit: Any, tracking: Any, views: Any = None
) -> Plan:
    """The plan of ``open`` for ``findings`` (the planner, as the run calls it)."""
    scope = Scope(files=tuple(f.item for f in findings))
    want = Want(scope, audit, tuple(findings), rendered, views or {})
    snap = Snapshot(
        tuple(observed),
        tracking=tracking_issue(tracking) if tracking else None,
        block=TrackingBlock(),
    )
    return plan_block(plan_run(want, snap), "the block as rendered", TrackingBlock())


def plan_sync(
    findings: Any, rendered: Any, observed: Any, audit: Any, tracking: Any, views: Any = None
) -> Plan:
    """The plan of ``sync`` over ``findings``, with no sub-issues (as on a GitHub without)."""
    want = Want(Scope(in_step=True), audit, tuple(findings), rendered, views or {}, status_texts={})
    snap = Snapshot(
        tuple(observed),
        tracking=tracking_issue(tracking) if tracking else None,
        block=TrackingBlock(),
        sub_issues=False,
    )
    return plan_block(plan_run(want, snap), "the block as rendered", TrackingBlock())


def ours(catalog: Catalog, item: int, number: int, **kw: Any) -> ObservedIssue:
    """An issue artbot filed for ``item``, with the body it renders today."""
    finding = catalog.get(item)
    [rendered] = render_all(catalog, [finding], TRACKING).values()
    return ObservedIssue(
        number=number,
        title=rendered.title,
        body=kw.pop("body", rendered.body),
        state=kw.pop("state", "open"),
        state_reason=kw.pop("state_reason", None),
        html_url="",
        labels=tuple(catalog.audit.labels),
        marker=IssueMarker(catalog.audit.commit, item),
    )


def test_open_creates_what_is_missing_and_presets_what_has_an_issue(catalog: Catalog) -> None:
    findings = [catalog.get(1), catalog.get(7)]
    rendered = render_all(catalog, findings, TRACKING)
    plan = plan_open(findings, rendered, [], catalog.audit, TRACKING)
    assert plan.of(Preset) == [Preset(1, 1108)]
    [create] = plan.of(Create)
    assert (create.item, create.title) == (7, rendered[7].title)
    [update] = plan.of(UpdateChecklist)  # the block, written once at the end
    assert update.issue == TRACKING and plan.actions[-1] == update


def test_open_finds_an_existing_issue_by_marker_not_by_title(catalog: Catalog) -> None:
    findings = [catalog.get(7)]
    rendered = render_all(catalog, findings, TRACKING)
    renamed = replace(ours(catalog, 7, 1200), title="renamed by a maintainer")
    plan = plan_open(findings, rendered, [renamed], catalog.audit, None)
    assert plan.actions == (Exists(7, 1200, "open"),)


def test_an_issue_of_another_audit_commit_is_not_ours(catalog: Catalog) -> None:
    other = replace(ours(catalog, 7, 1200), marker=IssueMarker("0000000", 7))
    assert canonical([other], catalog.audit) == {}


def test_the_lowest_number_wins_and_later_copies_are_duplicates(catalog: Catalog) -> None:
    findings = [catalog.get(7)]
    rendered = render_all(catalog, findings, TRACKING)
    issues = [ours(catalog, 7, 1300), ours(catalog, 7, 1200)]
    assert canonical(issues, catalog.audit)[7].number == 1200
    opened = plan_open(findings, rendered, issues, catalog.audit, None)
    assert opened.of(CloseDuplicate) == [CloseDuplicate(7, 1300, 1200)]
    synced = plan_sync(findings, rendered, issues, catalog.audit, None)
    assert synced.of(Duplicate) == [Duplicate(7, 1300, 1200)]


def test_an_issue_closed_as_duplicate_is_never_the_canonical_one(catalog: Catalog) -> None:
    issues = [
        ours(catalog, 7, 1200, state="closed", state_reason="duplicate"),
        ours(catalog, 7, 1300),
    ]
    assert canonical(issues, catalog.audit)[7].number == 1300


def test_sync_edits_only_a_body_whose_owned_region_changed(catalog: Catalog) -> None:
    findings = [catalog.get(7), catalog.get(8)]
    rendered = render_all(catalog, findings, TRACKING)
    fresh = ours(catalog, 7, 1200)
    body = rendered[8].body.replace("<!-- artbot:body:end -->", "stale\n<!-- artbot:body:end -->")
    stale = ours(catalog, 8, 1201, body=body)
    plan = plan_sync(findings, rendered, [fresh, stale], catalog.audit, TRACKING)
    assert plan.of(EditBody) == [EditBody(8, 1201, rendered[8].body)]


def test_sync_text_outside_the_owned_region_is_not_a_change(catalog: Catalog) -> None:
    findings = [catalog.get(7)]
    rendered = render_all(catalog, findings, TRACKING)
    edited = ours(catalog, 7, 1200, body=rendered[7].body + "\n\nA maintainer's note.")
    plan = plan_sync(findings, rendered, [edited], catalog.audit, TRACKING)
    assert plan.of(EditBody) == []


def test_sync_links_preset_issues_it_cannot_see_and_checks_the_checklist(
    catalog: Catalog,
) -> None:
    findings = list(catalog.findings)
    rendered = render_all(catalog, findings, TRACKING)
    entries = checklist_entries(findings, [], catalog.audit)
    assert [(e.item, e.issue) for e in entries][:3] == [(1, 1108), (2, 1109), (3, 1110)]
    assert all(e.issue is None for e in entries[3:])

    plan = plan_sync(findings, rendered, [], catalog.audit, TRACKING)
    labels = tuple(catalog.audit.labels)
    assert plan.of(LinkPreset) == [LinkPreset(n - 1107, n, labels) for n in (1108, 1109, 1110)]
    [update] = plan.of(UpdateChecklist)
    assert update.write.text == "the block as rendered" and update.write.filed == ()
    assert plan.actions[-2:] == (ReadTracking(TRACKING), update)  # the re-read, then the write
    assert plan.block is not None and plan.block.entries == entries
    # Rendered after planning, before any write: the block as it reads now is up to date.
    bare = replace(plan, actions=plan.actions[:-2])
    same = plan_block(bare, "the block", TrackingBlock(text="the block"))
    assert same.actions[-1] == ChecklistUpToDate(TRACKING) and not same.of(UpdateChecklist)
    assert plan_block(bare, "the block", TrackingBlock(text="old")).of(UpdateChecklist)


def test_closed_issues_read_closed_in_the_checklist_with_their_reason(catalog: Catalog) -> None:
    closed = ours(catalog, 7, 1200, state="closed", state_reason="not_planned")
    [entry] = [
        e for e in checklist_entries(catalog.findings, [closed], catalog.audit) if e.item == 7
    ]
    assert (entry.issue, entry.state, entry.state_reason) == (1200, "closed", "not_planned")


# --- filing by status: the decisions, from the recorded status (tests/helpers/statusdata.py) ------


def _views(catalog: Catalog, **by_item: Any) -> dict[int, Any]:
    from artbot.render.status_view import status_view
    from tests.helpers.statusdata import with_claims

    out = {}
    for item, build in by_item.items():
        finding = with_claims(catalog.get(int(item[1:])))
        out[finding.item] = status_view(finding, build(finding))
    return out


def test_open_files_a_fixed_item_to_be_closed_and_a_partial_one_open(catalog: Catalog) -> None:
    from tests.helpers.statusdata import fixed_item, partial_item

    views = _views(catalog, i7=fixed_item, i9=partial_item)
    findings = [catalog.get(7), catalog.get(9)]
    rendered = render_all(catalog, findings, TRACKING)
    plan = plan_open(findings, rendered, [], catalog.audit, TRACKING, views)
    seven, nine = plan.of(Create)
    assert (seven.fixed_in, seven.partly_fixed_in) == ("0.5.21", None)
    assert (nine.fixed_in, nine.partly_fixed_in) == (None, "0.5.21")
    assert "filed closed (fixed in 0.5.21)" in plan.text()
    # Every write its own step: the fixed item's close comes right after its create.
    from artbot.run.actions import CloseFixed

    at = plan.actions.index(seven)
    assert plan.actions[at + 1] == CloseFixed(7, None, "0.5.21")
    assert plan.of(CloseFixed) == [CloseFixed(7, None, "0.5.21")]


def test_a_lost_close_is_redone_but_a_human_reopen_is_kept(catalog: Catalog) -> None:
    from artbot.run.actions import CloseFixed
    from artbot.run.issues import close_was_lost, filed_body
    from tests.helpers.statusdata import fixed_item

    views = _views(catalog, i7=fixed_item)
    findings = [catalog.get(7)]
    rendered = render_all(catalog, findings, TRACKING)
    body = filed_body(rendered[7].body, views[7])
    lost = ours(catalog, 7, 1200, body=body)
    assert close_was_lost(lost)
    plan = plan_open(findings, rendered, [lost], catalog.audit, TRACKING, views)
    assert plan.of(CloseFixed) == [CloseFixed(7, 1200, "0.5.21")]
    reopened = ours(catalog, 7, 1200, body=body, state_reason="reopened")
    assert not plan_open(findings, rendered, [reopened], catalog.audit, None, views).of(CloseFixed)
    filed_open = ours(catalog, 7, 1200)  # filed before the fix: no "filed closed" line
    assert not plan_open(findings, rendered, [filed_open], catalog.audit, None, views).of(
        CloseFixed
    )


def test_sync_comments_on_a_status_change_before_editing_the_body(catalog: Catalog) -> None:
    from artbot.run.actions import StatusChange
    from artbot.run.status_comments import status_comment
    from tests.helpers.statusdata import fixed_item, partial_item

    before = _views(catalog, i9=partial_item)
    after = _views(catalog, i9=fixed_item)
    issue = ours(catalog, 9, 1200)  # no status in its body yet
    rendered = render_all(catalog, [catalog.get(9)], TRACKING)
    from artbot.records.marker import BODY_START

    filed = replace(issue, body=issue.body.replace(BODY_START, f"{BODY_START}\n{before[9].marker}"))
    plan = plan_sync([catalog.get(9)], rendered, [filed], catalog.audit, TRACKING, after)
    steps = [a for a in plan.actions if isinstance(a, (StatusChange, EditBody))]
    change = steps[0]
    assert change == StatusChange(9, 1200, before[9].state, after[9].state, "")
    assert isinstance(steps[1], EditBody)
    text = f"{after[9].marker}\nfixed"
    assert status_comment(change, [], text) is not None
    assert status_comment(change, ["hello", text], text) is None  # posted by a crashed run
    assert status_comment(change, [text, before[9].marker], text) is not None  # changed back


def test_fixed_items_are_ticked_with_the_release(catalog: Catalog) -> None:
    from tests.helpers.statusdata import fixed_item, partial_item

    views = _views(catalog, i7=fixed_item, i9=partial_item)
    entries = {
        e.item: e for e in checklist_entries(catalog.findings, [], catalog.audit, None, views)
    }
    assert (entries[7].fixed_in, entries[7].partly_fixed_in) == ("0.5.21", None)
    assert (entries[9].fixed_in, entries[9].partly_fixed_in) == (None, "0.5.21")
    assert entries[4].fixed_in is None and entries[4].partly_fixed_in is None


def test_the_block_write_looks_up_the_filed_issue_and_keeps_a_persons_ticks_made_meanwhile() -> (
    None
):
    """blockwrite.merge, the one pure merge: the planned text with the issue filed in the run
    looked up; applied to the body read right before the write; when the block was edited
    since observe read it, a person's ticks stay, but for those the write clears."""
    from artbot.run.blockwrite import BlockWrite, merge, ref
    from artbot.tracking.checklist import apply_block
    from artbot.tracking.requests import Request

    observed = (
        "- [ ] 7. A finding\n"
        "- [x] File the issue for item 7 <!-- artbot:request file=7 -->\n"
        "- [ ] Re-check against the newest release <!-- artbot:request recheck -->\n"
        "- [x] Declined: artbot's follow-up 101 is never filed (untick to take the answer back) "
        "<!-- artbot:declined 101 -->\n"
    )
    planned = (
        f"- [ ] 7. A finding — #{ref(7)}\n"
        "- [ ] Re-check against the newest release <!-- artbot:request recheck -->\n"
        "- [x] Declined: artbot's follow-up 101 is never filed (untick to take the answer back) "
        "<!-- artbot:declined 101 -->\n"
    )
    write = BlockWrite(planned, observed, (7,), frozenset({Request("file", 7)}))
    body = apply_block("Human text.\n", observed)
    text, new = merge(write, body, {7: 1112})
    assert text == planned.replace(str(ref(7)), "1112") and new == apply_block(body, text)
    # Meanwhile a person ticked the re-check, unticked the decline and wrote below the block.
    edited = observed.replace("- [ ] Re-check", "- [x] Re-check").replace(
        "- [x] Declined", "- [ ] Declined"
    )
    body = apply_block("Human text.\n", edited) + "A note.\n"
    text, new = merge(write, body, {7: 1112})
    assert "- [x] Re-check against the newest release" in text  # their tick, pending
    assert "- [ ] Declined: artbot's follow-up 101" in text  # the answer taken back
    assert "#1112" in text and new.endswith("A note.\n") and new.startswith("Human text.\n")


def test_open_creates_only_the_labels_of_the_issue_it_files(catalog: Catalog) -> None:
    """#10: item 7 needs the audit's labels and its backends', with the catalog's colours."""
    from artbot.run.actions import CreateLabel

    findings = [catalog.get(7)]
    plan = plan_open(findings, render_all(catalog, findings, TRACKING), [], catalog.audit, TRACKING)
    styles = catalog.audit.label_definitions
    wanted = dict.fromkeys([*catalog.audit.labels, *catalog.get(7).labels])
    assert plan.of(CreateLabel) == [
        CreateLabel(n, styles[n].color, styles[n].description) for n in wanted
    ]
