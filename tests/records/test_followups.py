"""artbot's own follow-ups (``origin: artbot``), kept apart from the audit's items: numbered
100 x the followed item + n, rendered with a first line that says artbot found them and links
the followed item's issue, listed under their own heading in the tracking checklist, filed by
``open --item``, and never filed once a maintainer's decline tick is honoured (a writer's edit
ticked it, as any request; from then on it stands, scheduled syncs included)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from artbot.errors import CatalogInvalid
from artbot.records.catalog import load_catalog
from artbot.records.models import Finding, follow_up_of
from artbot.render.issue import render_checklist
from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import END_MARKER, START_MARKER, ChecklistEntry, read_block
from artbot.tracking.requests import (
    Request,
    declined,
    offered,
    panel,
    sort_ticks,
    ticked,
    ticks_in,
)
from tests.helpers.artrepo import NAME, OWNER, TRACKING, artbot, event_file, issues_for
from tests.helpers.golden import render_issue
from tests.helpers.shipped import AUDIT_ITEMS, FOLLOW_UPS

REPO = Path(__file__).resolve().parents[2]


def record(**changes: object) -> dict[str, object]:
    data = load_catalog(REPO).get(801).model_dump(mode="json")
    data.update(changes)
    return data


def test_the_shipped_follow_ups_follow_audit_items() -> None:
    catalog = load_catalog(REPO)
    assert FOLLOW_UPS and set(FOLLOW_UPS).isdisjoint(AUDIT_ITEMS)
    for item in FOLLOW_UPS:
        finding = catalog.get(item)
        assert finding.origin == "artbot" and follow_up_of(item) == finding.follows
        assert finding.follows in AUDIT_ITEMS and finding.checked_release
        assert item in catalog.regression  # each has its regression test for ART's suite


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"item": 901}, "numbered 801-899"),
        ({"checked_release": None}, "names follows and checked_release"),
        ({"origin": "audit"}, "for origin: artbot only"),
        ({"origin": "audit", "follows": None, "checked_release": None}, "numbered 1-99"),
        ({"issue": 5000}, "no preset issue"),
    ],
)
def test_a_follow_up_is_numbered_after_its_item(changes: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Finding.model_validate(record(**changes))


def test_a_follow_up_of_an_item_not_in_the_catalog_is_refused(tmp_path: Path) -> None:
    import shutil

    for part in ("findings", "repros"):
        shutil.copytree(REPO / part, tmp_path / part)
    path = tmp_path / "findings" / "followup-0801-ppo-sentinel-loss.yaml"
    text = path.read_text(encoding="utf-8").replace("item: 801", "item: 7701", 1)
    path.write_text(text.replace("follows: 8", "follows: 77", 1), encoding="utf-8")
    (tmp_path / "findings" / "results" / "801.json").unlink()
    with pytest.raises(CatalogInvalid, match="no audit item 77"):
        load_catalog(tmp_path)


@pytest.mark.parametrize("item", FOLLOW_UPS)
def test_the_first_line_says_artbot_found_it_and_links_the_items_issue(item: int) -> None:
    catalog = load_catalog(REPO)
    finding = catalog.get(item)
    issues = {f.item: f.issue for f in catalog.findings if f.issue}
    body = render_issue(catalog, finding, tracking_issue=TRACKING, follows=1116, issues=issues).body
    first = body.split("\n")[2]
    if finding.found_checking is None:  # found while checking the fix of the item it follows
        checked = f"item {finding.follows} (#1116)"
    else:  # 401: item 4 on the Unsloth backend, found while checking #1109's fix (item 2)
        checked = f"item {finding.found_checking} (#{issues[finding.found_checking]})"
        assert f"; it extends item {finding.follows} (#1116)." in first
    assert first.startswith("**artbot's own finding, not the audit's:** found while checking")
    assert f"the fix for {checked} in openpipe-art {finding.checked_release}" in first
    assert f"follow-up {item} to item {finding.follows}" in body
    # Without the followed item's issue number, the line names the item; the footer names
    # the tracking issue (said once).
    body = render_issue(catalog, finding, tracking_issue=TRACKING).body
    assert f"audit item {finding.follows}" in body.split("\n")[2]
    assert f"#{TRACKING}" not in body.split("\n")[2] and f"tracked in #{TRACKING}" in body
    assert finding.found_checking in (None, *AUDIT_ITEMS)


def entries() -> list[ChecklistEntry]:
    return [
        ChecklistEntry(8, "Unclamped exp", 1116, "closed", "completed", fixed_in="0.5.21"),
        ChecklistEntry(9, "Tinker masks", None, None, None, present_in="0.5.23"),
        ChecklistEntry(801, "Sentinel", None, None, None, present_in="0.5.23", follows=8),
    ]


def test_the_checklist_lists_follow_ups_under_their_own_heading() -> None:
    audit = load_catalog(REPO).audit
    text = render_checklist(entries(), audit, REPO / "templates")
    head, _, tail = text.partition("**Found by artbot while checking the fixes**")
    assert "- [x] 8. Unclamped exp — #1116 — fixed in 0.5.21" in head
    assert "- [ ] 9. Tinker masks — still present in 0.5.23" in head
    assert "801." not in head.split("**Requests.**")[0]
    assert "- [ ] 801. Sentinel (follows item 8) — still present in 0.5.23" in tail
    assert "<!-- artbot:request decline=801 -->" in tail


DECLINE = Request("decline", 801)


def honoured(lines: object) -> list[tuple[str, bool, bool]]:
    return [(r.request.key, r.ticked, r.standing) for r in lines]  # type: ignore[attr-defined]


def test_a_writers_decline_tick_is_honoured_and_withdraws_the_filing_request() -> None:
    shown = panel(entries(), (), None)
    keys = [line.request.key for line in shown.lines]
    assert keys == ["file=9", "file=801", "recheck", "decline=801"]
    block = "- [x] Decline artbot's follow-up 801 (never file it) "
    block += "<!-- artbot:request decline=801 -->\n"
    block += "- [x] File the issue for item 801 <!-- artbot:request file=801 -->"
    ticks = ticked(block)
    assert declined(block) == set()  # a tick alone is not an honoured decline
    asked = sort_ticks(TRACKING, ticks, entries(), sender="maintainer", added=ticks)
    assert asked.carry == (DECLINE,) and asked.files() == []  # the decline wins
    assert Request("file", 801) in asked.drop
    after = asked.panel_for(entries(), ticks, None, done=[DECLINE])
    assert honoured(after.lines) == [
        ("file=9", False, False),
        ("recheck", False, False),
        ("decline=801", True, True),
    ]
    text = render_checklist(entries(), load_catalog(REPO).audit, REPO / "templates", panel=after)
    assert declined(text) == {801}
    assert Request("file", 801) not in offered(entries(), declined(text))


def test_an_honoured_decline_stands_through_scheduled_syncs() -> None:
    text = panel(entries(), (), None, declined=[801])
    block = render_checklist(entries(), load_catalog(REPO).audit, REPO / "templates", panel=text)
    assert declined(block) == {801} and ticked(block) == set()
    asked = sort_ticks(TRACKING, ticked(block), entries(), declined=declined(block))
    assert asked.carry == () and asked.revert == () and asked.standing == (801,)
    again = asked.panel_for(entries(), ticked(block), None, done=(), declined=declined(block))
    assert ("decline=801", True, True) in honoured(again.lines)


def test_a_decline_tick_no_writer_made_is_cleared() -> None:
    # A scheduled sync: no edit made it, so it is cleared like any other tick.
    asked = sort_ticks(TRACKING, {DECLINE}, entries())
    assert asked.carry == () and asked.revert == (DECLINE,) and asked.why == "unattributed"
    # An edit by someone without write access reverts honoured declines too.
    asked = sort_ticks(
        TRACKING, (), entries(), sender="mallory", added=(), may_write=False, declined=[801]
    )
    assert asked.revert == (DECLINE,) and asked.standing == ()
    after = asked.panel_for(entries(), (), None, done=(), declined=[801])
    assert ("decline=801", False, False) in honoured(after.lines)
    # An honoured line an edit wrote itself counts as that edit's tick, not as artbot's record.
    line = "- [x] Declined: artbot's follow-up 801 <!-- artbot:declined 801 -->"
    added = ticks_in(f"{START_MARKER}\n{line}\n{END_MARKER}")
    assert added == {DECLINE}
    asked = sort_ticks(TRACKING, (), entries(), sender="mallory", added=added, declined=[801])
    assert asked.carry == (DECLINE,)  # so the sender's permission is asked (observe) ...
    asked = sort_ticks(
        TRACKING, (), entries(), sender="mallory", added=added, may_write=False, declined=[801]
    )
    assert asked.revert == (DECLINE,) and asked.standing == ()  # ... and, denied, reverted


def test_open_files_a_follow_up_linking_its_items_issue(
    art: GitHubSandbox,  # noqa: F811
    root: Path,  # noqa: F811
) -> None:
    done = artbot(art, root, "open", "--item", "8")
    assert done.exit_code == 0, done.output
    (eight,) = issues_for(art, 8, state=None)
    done = artbot(art, root, "open", "--item", "801")
    assert done.exit_code == 0, done.output
    (follow_up,) = issues_for(art, 801)
    assert f"checking the fix for item 8 (#{eight['number']})" in follow_up["body"]
    block = read_block(art.get_issue(OWNER, NAME, TRACKING)["body"]) or ""
    audit_part, _, own = block.partition("**Found by artbot while checking the fixes**")
    assert f"#{follow_up['number']}" in own and f"#{follow_up['number']}" not in audit_part
    # The next sync names the filed follow-up in item 8's own issue, as artbot's.
    done = artbot(art, root, "sync")
    assert done.exit_code == 0, done.output
    body = art.get_issue(OWNER, NAME, eight["number"])["body"]
    assert f"**artbot's follow-up 801** (#{follow_up['number']}): " in body
    assert body.count("follow-up 801") == 1  # announced once


def test_a_declined_follow_up_is_never_filed(
    art: GitHubSandbox,  # noqa: F811
    root: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    done = artbot(art, root, "open", "--item", "8")
    assert done.exit_code == 0, done.output
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    box = "- [ ] Decline artbot's follow-up 1001 (never file it)"
    assert box in before
    after = before.replace(box, box.replace("[ ]", "[x]"))
    # Ticked without an edit event (a scheduled sync): not honoured, cleared with a note.
    art.edit_issue(OWNER, NAME, TRACKING, body=after)
    done = artbot(art, root, "sync")
    assert done.exit_code == 0, done.output
    block = read_block(art.get_issue(OWNER, NAME, TRACKING)["body"]) or ""
    assert box in block and declined(block) == set()
    # Ticked by a writer's edit, with its event: honoured, and it stands.
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    after = before.replace(box, box.replace("[ ]", "[x]"))
    art.edit_issue(OWNER, NAME, TRACKING, body=after)
    event = event_file(tmp_path, OWNER, before, after)  # the owner: admin
    done = artbot(art, root, "sync", "--event", str(event))
    assert done.exit_code == 0, done.output
    assert "declined follow-up 1001" in done.output
    for _ in range(2):  # later scheduled syncs keep the standing answer
        done = artbot(art, root, "sync")
        assert done.exit_code == 0, done.output
        block = read_block(art.get_issue(OWNER, NAME, TRACKING)["body"]) or ""
        assert declined(block) == {1001}
        assert "<!-- artbot:declined 1001 -->" in block
    done = artbot(art, root, "open", "--item", "1001")
    assert done.exit_code == 0, done.output
    assert "item 1001: declined in the tracking issue; not filed" in done.output
    assert issues_for(art, 1001, state=None) == []
    block = read_block(art.get_issue(OWNER, NAME, TRACKING)["body"]) or ""
    assert declined(block) == {1001}  # the answer stands
    assert "File the issue for item 1001" not in block
