"""#21.5: degrade, don't abort. A failing sub-issue read skips the sub-issue part with a
warning and does the rest; a cache that can't be saved is a warning after the report; comments
are read from every page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from artbot.errors import RemoteError
from artbot.records.catalog import load_catalog
from artbot.records.marker import BODY_START
from artbot.run.commands import open_issues, sync
from artbot.sandbox import GitHubSandbox
from artbot.status import FixEvidence, ItemStatus, SourceLine
from tests.helpers.artrepo import NAME, OWNER, TRACKING, artbot, issues_for, repo_client, writes
from tests.helpers.statusdata import fixed_item, install
from tests.helpers.testsandbox import TestSandbox


def _stale(art: GitHubSandbox, number: int) -> str:
    """Make #number's owned region differ from what artbot renders; returns the fresh body."""
    body = art.get_issue(OWNER, NAME, number)["body"]
    art.edit_issue(OWNER, NAME, number, body=body.replace(BODY_START, BODY_START + "\nstale", 1))
    return body


@pytest.mark.parametrize("status", [403, 422, 500])
def test_a_failing_sub_issue_list_still_lets_the_body_fixes_land(
    art: TestSandbox, root: Path, status: int
) -> None:
    """Done when: a 403 on the sub-issue list still lets the body fixes land (before: exit 1
    and 0 writes, body fixes and labels skipped too)."""
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    [issue] = issues_for(art, 4)
    _stale(art, issue["number"])
    art.inject_fault("GET", rf"/issues/{TRACKING}/sub_issues$", status, times=10)
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output
    assert f"could not read #{TRACKING}'s sub-issues" in result.output
    assert "stale" not in art.get_issue(OWNER, NAME, issue["number"])["body"]
    labelled = [w for w in writes(art) if w.endswith("/issues/1108/labels")]
    assert labelled  # the hand-filed issues are labelled all the same


def test_a_cache_that_cannot_be_saved_is_a_warning_after_the_report(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    """Why 7: a cache file that can't be written lost the --json report after the writes."""
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the cache's folder should be")
    result = artbot(art, root, "open", "--item", "4", "--json", "--cache", str(blocked / "c.json"))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert any(line.startswith("item 4: filed #") for line in report["done"])
    assert "warning: could not save the cache" in result.stderr


def test_150_comments_cause_no_repeat_status_comment(art: TestSandbox, root: Path) -> None:
    """Done when: on an issue with more than 100 comments the status comment was posted again
    on every sync, since only the first page of comments was read."""
    catalog = load_catalog(root)
    finding = catalog.get(7)
    install(root, finding, ItemStatus(item=7, points=fixed_item(finding).points[:1]))
    open_issues(load_catalog(root), repo_client(art), [7], TRACKING)
    [issue] = issues_for(art, 7)
    number = issue["number"]
    for n in range(120):
        art.seed_comment(OWNER, NAME, number, f"comment {n}", user="someone")
    install(root, finding, fixed_item(finding))
    catalog = load_catalog(root)
    # The status comment (the 121st) goes out, then the body edit fails: the next sync must
    # find that comment on the second page.
    art.inject_fault("PATCH", rf"/issues/{number}$", "drop", times=50)
    with pytest.raises(RemoteError):
        sync(catalog, repo_client(art), TRACKING)
    art.clear_faults()
    for n in range(29):
        art.seed_comment(OWNER, NAME, number, f"later {n}", user="someone")
    art.requests.clear()
    for _ in range(2):
        sync(catalog, repo_client(art), TRACKING)
    posted = [w for w in writes(art) if w.endswith(f"/issues/{number}/comments")]
    assert posted == []
    comments = repo_client(art).list_comments(number)
    assert len(comments) == 150
    assert [c["body"] for c in comments[:2]] == ["comment 0", "comment 1"]  # oldest first
    assert "**Fixed in 0.5.21**" in art.get_issue(OWNER, NAME, number)["body"]


def test_an_issue_whose_body_would_pass_githubs_limit_is_reported_and_skipped(
    art: TestSandbox, root: Path
) -> None:
    """#53, attack 7: a status record holding 400 "fix" lines per claim (as a release's code
    wrote them) grew item 4's body past GitHub's 65,536 characters; the sync stopped there,
    and so did every scheduled sync. Now that issue is reported and skipped, the rest synced."""
    catalog = load_catalog(root)
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    assert artbot(art, root, "open", "--item", "6").exit_code == 0
    hostile = fixed_item(catalog.get(4))
    line = SourceLine(path="art/loss.py", line=1, look_for="x = 1  # " + "y" * 900)
    for n, point in enumerate(hostile.points[1:], 1):  # each release's point
        claims = {
            cid: c.model_copy(update={"fix": FixEvidence(lines=[line] * 400)})
            for cid, c in point.claims.items()
        }
        hostile.points[n] = point.model_copy(update={"claims": claims})
    install(root, catalog.get(4), hostile)
    install(root, catalog.get(6), fixed_item(catalog.get(6)))
    [four], [six] = issues_for(art, 4), issues_for(art, 6)
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output
    assert "item 4: not synced: " in result.output and "GitHub's limit is 65,536" in result.output
    assert art.get_issue(OWNER, NAME, four["number"])["body"] == four["body"]
    assert art.get_issue(OWNER, NAME, six["number"])["body"] != six["body"]  # synced
