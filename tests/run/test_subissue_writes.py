"""Sub-issues end to end: ``artbot open`` and ``artbot sync`` (PyGithub over real HTTP) against
the sandbox, for the scenarios issue #14 is done by, and for the people around them."""

from __future__ import annotations

from pathlib import Path

from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.run.commands import sync
from artbot.sandbox import GitHubSandbox
from artbot.tracking.record import read_record
from artbot.tracking.subissues import SubIssueRecord
from tests.helpers.artrepo import NAME, OWNER, TRACKING, artbot, checklist, issues_for, writes
from tests.helpers.testsandbox import TestSandbox

PRESET = [1108, 1109, 1110]
SUB_ISSUES = f"/repos/{OWNER}/{NAME}/issues/{TRACKING}/sub_issues"
REPO = Path(__file__).resolve().parents[2]


def seed(sandbox: GitHubSandbox) -> GitHubSandbox:
    """What the ``art`` fixture seeds, on a sandbox made here."""
    sandbox.create_repo(OWNER, NAME)
    for number in PRESET:
        sandbox.seed_issue(OWNER, NAME, f"dedicated issue {number}", "by hand", number=number)
    text = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    title, _, body = text.partition("\n")
    sandbox.seed_issue(OWNER, NAME, title, body.lstrip(), number=TRACKING)
    sandbox.requests.clear()
    return sandbox


def ok(sandbox: GitHubSandbox, root: Path, *args: str) -> str:
    result = artbot(sandbox, root, *args)
    assert result.exit_code == 0, result.output
    return result.output  # stdout and stderr, as a terminal shows them


def filed(sandbox: GitHubSandbox, item: int) -> int:
    [issue] = issues_for(sandbox, item)
    return int(issue["number"])


def subs(sandbox: GitHubSandbox) -> list[int]:
    return sandbox.sub_issues(OWNER, NAME, TRACKING)


def test_open_open_sync_gives_the_items_issues_in_item_order_once(
    art: GitHubSandbox, root: Path
) -> None:
    ok(art, root, "open", "--item", "7")
    seven = filed(art, 7)
    assert subs(art) == [seven]  # open adds what it files, by the issue's id
    ok(art, root, "open", "--item", "8")
    eight = filed(art, 8)
    assert subs(art) == [seven, eight]

    out = ok(art, root, "sync")
    assert subs(art) == [*PRESET, seven, eight]
    assert "item 1: add #1108 to #1111's sub-issues" in out
    tracking = art.get_issue(OWNER, NAME, TRACKING)
    assert tracking["sub_issues_summary"]["total"] == 5
    for number in [*PRESET, seven, eight]:
        parent = art.get_issue(OWNER, NAME, number)["parent_issue_url"]
        assert parent.endswith(f"/issues/{TRACKING}")
    record = read_record(checklist(art)).sub_issues
    assert record == SubIssueRecord(added=(*PRESET, seven, eight))

    art.requests.clear()
    again = ok(art, root, "sync")
    assert writes(art) == []
    assert [r.path for r in art.requests if r.path == SUB_ISSUES] == []  # the summary sufficed
    assert "sub-issues up to date" in again


def test_a_sub_issue_removed_by_hand_costs_one_write_and_is_noted(
    art: GitHubSandbox, root: Path
) -> None:
    ok(art, root, "open", "--item", "7")
    ok(art, root, "open", "--item", "8")
    ok(art, root, "sync")
    eight = filed(art, 8)
    art.remove_sub_issue(OWNER, NAME, TRACKING, eight)

    art.requests.clear()
    first = ok(art, root, "sync")
    ok(art, root, "sync")
    assert eight not in subs(art)  # not re-added
    assert writes(art) == [f"PATCH /repos/{OWNER}/{NAME}/issues/{TRACKING}"]  # the note, once
    assert f"#{eight} was removed from #1111's sub-issues by a person" in first
    block = checklist(art)
    assert f"_Sub-issues: #{eight} (item 8) was removed from this issue's sub-issues by hand" in (
        block
    )
    assert read_record(block).sub_issues == SubIssueRecord(
        added=(*PRESET, filed(art, 7)), removed=(eight,)
    )

    # A person adds it back: it is artbot's again, and the note goes.
    art.add_sub_issue(OWNER, NAME, TRACKING, eight)
    ok(art, root, "sync")
    assert "was removed" not in checklist(art)
    assert read_record(checklist(art)).sub_issues == SubIssueRecord(
        added=(*PRESET, filed(art, 7), eight)
    )


def test_an_issue_with_another_parent_is_reported_not_moved(art: GitHubSandbox, root: Path) -> None:
    epic = art.seed_issue(OWNER, NAME, "A maintainer's epic", "their plan")
    art.add_sub_issue(OWNER, NAME, epic, 1109)
    out = ok(art, root, "sync")
    assert f"#1109 already has the parent #{epic}; not moved" in out
    assert art.sub_issues(OWNER, NAME, epic) == [1109]
    assert subs(art) == [1108, 1110]
    assert f"#1109 (item 2) already has the parent issue #{epic}" in checklist(art)

    art.requests.clear()
    ok(art, root, "sync")  # remembered: not tried again
    assert writes(art) == []

    ok(art, root, "sync", "--replace-parent")
    assert subs(art) == PRESET and art.sub_issues(OWNER, NAME, epic) == []
    assert "already has the parent" not in checklist(art)


def test_a_move_that_names_a_refused_add_is_not_sent_and_the_next_sync_puts_it_in_order(
    art: GitHubSandbox, root: Path
) -> None:
    ok(art, root, "open", "--item", "7")  # item 7's issue is the first sub-issue
    seven = filed(art, 7)
    epic = art.seed_issue(OWNER, NAME, "A maintainer's epic", "their plan")
    art.add_sub_issue(OWNER, NAME, epic, 1110)  # GitHub refuses #1110 as a second parent's
    planned = ok(art, root, "sync", "--dry-run")
    assert f"item 7: move #{seven} after #1110 in #1111's sub-issues" in planned
    out = ok(art, root, "sync")
    assert f"#1110 already has the parent #{epic}" in out
    assert f"move #{seven} after #1110 in #1111's sub-issues: not sent, #1110" in out
    assert subs(art) == [seven, 1108, 1109]  # as planned, but for the move
    assert read_record(checklist(art)).sub_issues == SubIssueRecord(
        added=(seven, 1108, 1109), elsewhere=((1110, f"#{epic}"),)
    )
    ok(art, root, "sync")  # the record is out of item order: the list is read, one move
    assert subs(art) == [1108, 1109, seven]
    art.requests.clear()
    ok(art, root, "sync")
    assert writes(art) == []


def test_dry_run_shows_the_sub_issue_plan_and_writes_nothing(
    art: GitHubSandbox, root: Path
) -> None:
    ok(art, root, "open", "--item", "7")
    art.requests.clear()
    out = ok(art, root, "sync", "--dry-run")
    assert "item 3: add #1110 to #1111's sub-issues" in out
    assert f"item 7: move #{filed(art, 7)} after #1110 in #1111's sub-issues" in out
    assert writes(art) == []
    dry_open = ok(art, root, "open", "--item", "4", "--dry-run")
    assert "item 4: add the new issue to #1111's sub-issues" in dry_open


def test_a_failed_add_is_a_warning_and_the_next_sync_settles_it(
    art: TestSandbox, root: Path
) -> None:
    ok(art, root, "open", "--item", "7")
    # The first add answers 502 after taking effect: never re-sent blind, so not known.
    art.inject_fault("POST", r"/issues/1111/sub_issues$", 502, after_write=True)
    out = ok(art, root, "sync")
    assert "not added to #1111's sub-issues" in out
    assert subs(art).count(1108) == 1
    ok(art, root, "sync")  # the summary disagrees with the record: read the list, record it
    assert subs(art) == [*PRESET, filed(art, 7)]
    assert read_record(checklist(art)).sub_issues == SubIssueRecord(added=(*PRESET, filed(art, 7)))
    art.requests.clear()
    ok(art, root, "sync")
    assert writes(art) == []


def test_without_sub_issues_artbot_says_so_once_and_keeps_the_checklist(root: Path) -> None:
    with GitHubSandbox(sub_issues=False) as old:
        seeded = seed(old)
        opened = ok(seeded, root, "open", "--item", "7")
        synced = ok(seeded, root, "sync")
        for out in (opened, synced):
            assert out.count("this GitHub has no sub-issues") == 1
        assert not [r for r in seeded.requests if "sub_issue" in r.path or "parent" in r.path]
        assert "] 7. " in checklist(seeded) and read_record(checklist(seeded)).sub_issues is None


def test_a_404_from_the_endpoints_is_said_once_and_the_checklist_still_written(
    root: Path,
) -> None:
    # A server that reports sub_issues_summary but has no sub-issue endpoints.
    with GitHubSandbox(sub_issues=False) as half:
        seeded = seed(half)
        half.sub_issues_enabled = True  # summaries on; the routes were built without them
        catalog = load_catalog(root)
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=half.api_url, token="t", cache=EtagCache())
        outcome = sync(catalog, repo, TRACKING)
        assert [w for w in outcome.warnings if "no sub-issues" in w] == [
            "sub-issues: this GitHub has no sub-issues (tracking issue #1111); the checklist "
            "alone tracks progress"
        ]
        assert [r.status for r in seeded.requests if r.path == SUB_ISSUES] == [404]
        assert "] 1. " in checklist(seeded)


def test_the_step_summary_names_the_sub_issue_changes(art: GitHubSandbox, root: Path) -> None:
    from artbot.cli.summary import step_summary

    catalog = load_catalog(root)
    repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=art.api_url, token="t", cache=EtagCache())
    outcome = sync(catalog, repo, TRACKING)
    text = step_summary(catalog, outcome, dry_run=False)
    assert "| #1108 | not seen | labelled, made a sub-issue |" in text  # not yet labelled
    art.remove_sub_issue(OWNER, NAME, TRACKING, 1110)
    text = step_summary(catalog, sync(catalog, repo, TRACKING), dry_run=False)
    assert "| #1110 | open | removed from the sub-issues by hand |" in text
