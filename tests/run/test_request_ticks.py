"""#31.3-4: a tick counts only when an edit by a writer made it, and only artbot's own comments
are artbot's. Against the sandbox, through the CLI as requests.yml and the scheduled workflow
run it."""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.cli.demo import tick_request
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import (
    NAME,
    OWNER,
    TRACKING,
    artbot,
    checklist,
    event_file,
    issues_for,
    prepared,
    request_line,
    writes,
)
from tests.helpers.testsandbox import TestSandbox


def test_a_scheduled_sync_never_carries_out_a_tick_and_clears_it_with_a_note(
    art: GitHubSandbox, root: Path
) -> None:
    prepared(art, root)
    tick_request(art, load_catalog(root), TRACKING, "file=5")
    result = artbot(art, root, "sync")  # no event: the schedule, or a maintainer's machine
    assert result.exit_code == 0, result.output + result.stderr
    assert issues_for(art, 5, state=None) == []
    block = checklist(art)
    assert request_line(block, "file=5").startswith("- [ ] ")
    assert 'a tick on "File the issue for item 5" was cleared' in block
    assert "tick it again" in block
    art.requests.clear()
    assert artbot(art, root, "sync").exit_code == 0 and writes(art) == []  # the note stays


@pytest.mark.parametrize(
    "form",
    ["* [x] ", "+ [x] ", "-  [x] ", "\t- [x] ", "   - [X] ", "> - [x] ", "1. [x] "],
    ids=["star", "plus", "two-spaces", "tab", "indent-X", "quoted", "numbered"],
)
def test_every_checkbox_form_is_a_tick_and_none_is_carried_out_without_an_edit(
    art: GitHubSandbox, root: Path, form: str
) -> None:
    prepared(art, root)
    body = art.get_issue(OWNER, NAME, TRACKING)["body"]
    line = "- [ ] File the issue for item 5 <!-- artbot:request file=5 -->"
    assert line in body
    art.edit_issue(OWNER, NAME, TRACKING, body=body.replace(line, line.replace("- [ ] ", form)))
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output + result.stderr
    assert issues_for(art, 5, state=None) == []
    assert "cleared the tick on 'File the issue for item 5'" in result.output


def test_a_readers_tick_then_a_writers_unrelated_edit_is_not_carried_out(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    prepared(art, root)
    tick_request(art, load_catalog(root), TRACKING, "file=5", sender="mallory")
    art.set_permission(OWNER, NAME, "maintainer", "maintain")
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    after = before + "\n\nA maintainer's unrelated note."
    art.edit_issue(OWNER, NAME, TRACKING, body=after)
    event = event_file(tmp_path, "maintainer", before, after)
    result = artbot(art, root, "sync", "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    assert issues_for(art, 5, state=None) == []
    assert request_line(checklist(art), "file=5").startswith("- [ ] ")


@pytest.mark.parametrize("status", [502, 403])
def test_a_failing_permission_lookup_carries_nothing_out_then_or_later(
    art: TestSandbox, root: Path, tmp_path: Path, status: int
) -> None:
    prepared(art, root)
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    tick_request(art, load_catalog(root), TRACKING, "file=5", sender="maintainer")
    after = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.set_permission(OWNER, NAME, "maintainer", "maintain")
    art.inject_fault("GET", r"/permission$", status, times=50)
    event = event_file(tmp_path, "maintainer", before, after)
    result = artbot(art, root, "sync", "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    assert issues_for(art, 5, state=None) == []
    assert "GitHub did not say whether @maintainer has write access" in checklist(art)
    art.clear_faults()
    assert artbot(art, root, "sync").exit_code == 0  # the next scheduled sync
    assert issues_for(art, 5, state=None) == []


def test_a_writers_tick_is_carried_out_once(art: GitHubSandbox, root: Path, tmp_path: Path) -> None:
    prepared(art, root)
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    tick_request(art, load_catalog(root), TRACKING, "file=5", sender="maintainer")
    after = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.set_permission(OWNER, NAME, "maintainer", "write")
    event = event_file(tmp_path, "maintainer", before, after)
    for _ in range(2):  # the same event twice (a re-run of the workflow), then the schedule
        assert artbot(art, root, "sync", "--event", str(event)).exit_code == 0
    assert artbot(art, root, "sync").exit_code == 0
    assert len(issues_for(art, 5, state=None)) == 1


def test_a_status_marker_in_someone_elses_comment_is_not_artbots_word(
    art: GitHubSandbox, root: Path
) -> None:
    """#31.4: a drive-by comment carrying artbot's status marker for the new status does not
    stop artbot's own status comment."""
    from artbot.render.status_view import status_view
    from artbot.run.commands import open_issues, sync
    from artbot.status import ItemStatus
    from tests.helpers.artrepo import repo_client
    from tests.helpers.statusdata import fixed_item, install

    catalog = load_catalog(root)
    finding = catalog.get(7)
    install(root, finding, ItemStatus(item=7, points=fixed_item(finding).points[:1]))
    open_issues(load_catalog(root), repo_client(art), [7], TRACKING)
    [issue] = issues_for(art, 7)
    install(root, finding, fixed_item(finding))
    catalog = load_catalog(root)
    view = status_view(catalog.get(7), fixed_item(catalog.get(7)))
    assert view is not None
    forged = f"{view.marker}\nAll fixed, nothing to see here."
    art.seed_comment(OWNER, NAME, issue["number"], forged, user="drive-by")
    art.requests.clear()
    sync(catalog, repo_client(art), TRACKING)
    posted = [w for w in writes(art) if w.endswith(f"/issues/{issue['number']}/comments")]
    assert len(posted) == 1  # artbot's own status comment, the forged one notwithstanding
