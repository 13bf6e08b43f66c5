"""Hardening (#12) items 1, 4 and 7: ownership by marker *and* author, the tracking issue
checked before the first write, bodies read fresh before they are written.

The pure rules first (:mod:`artbot.tracking.ownership`), then PyGithub over HTTP against the
sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.records.catalog import load_catalog
from artbot.records.marker import BODY_END, IssueMarker
from artbot.records.models import ACTIONS_BOT
from artbot.records.observed import ObservedIssue
from artbot.run.identity import Identity
from artbot.sandbox import GitHubSandbox
from artbot.tracking.ownership import claim
from tests.helpers.artrepo import (
    CANARY,
    NAME,
    OWNER,
    REPO,
    TRACKING,
    artbot,
    checklist,
    filed_body,
    issues_for,
    item_line,
    writes,
)
from tests.helpers.testsandbox import TestSandbox

AUDIT = load_catalog(REPO).audit
LABELS = tuple(AUDIT.labels)


def _issue(number: int, body: str, author: str | None, **kw: object) -> ObservedIssue:
    labels = kw.pop("labels", LABELS)
    return ObservedIssue(
        number=number,
        title="t",
        body=body,
        state="open",
        state_reason=None,
        html_url="",
        labels=labels,  # type: ignore[arg-type]
        marker=IssueMarker.find(body),
        author=author,
        **kw,  # type: ignore[arg-type]
    )


# -- the pure rules ------------------------------------------------------------------------


def test_a_marker_written_by_someone_else_is_not_ours() -> None:
    body = filed_body(7)
    ours, human = _issue(5, body, ACTIONS_BOT), _issue(3, body, "alice")
    kept, foreign = claim([human, ours], AUDIT, (ACTIONS_BOT,))
    assert [i.marker for i in kept] == [None, ours.marker]
    assert [(f.item, f.issue, f.author) for f in foreign] == [(7, 3, "alice")]
    assert "@alice" in foreign[0].describe() and "left alone" in foreign[0].describe()


def test_logins_compare_without_case_and_unknown_authors_are_foreign() -> None:
    body = filed_body(7)
    kept, foreign = claim([_issue(1, body, "GitHub-Actions[bot]")], AUDIT, (ACTIONS_BOT,))
    assert kept[0].marker is not None and not foreign
    _, foreign = claim([_issue(2, body, None)], AUDIT, (ACTIONS_BOT,))
    assert "unknown author" in foreign[0].why


def test_the_tracking_issue_and_pull_requests_are_never_a_findings_issue() -> None:
    body = filed_body(7)
    tracking = _issue(TRACKING, body, ACTIONS_BOT)
    pull = _issue(9, body, ACTIONS_BOT, pull_request=True)
    kept, foreign = claim([tracking, pull], AUDIT, (ACTIONS_BOT,), TRACKING)
    assert all(i.marker is None for i in kept)
    assert [f.why for f in foreign] == ["is the tracking issue", "is a pull request"]


def test_the_login_is_configured_never_inferred() -> None:
    assert Identity().configured(AUDIT) == (ACTIONS_BOT,)  # the Actions default
    assert Identity().configured(AUDIT.model_copy(update={"login": "app[bot]"})) == ("app[bot]",)
    assert Identity(("maintainer",)).configured(AUDIT) == ("maintainer",)  # --author wins


# -- against the sandbox -------------------------------------------------------------------


def _copied(art: GitHubSandbox, item: int, author: str = "alice", extra: str = "") -> int:
    """A person's issue whose body is a copy of artbot's, hidden markers and all."""
    copy = filed_body(item).replace(BODY_END, f"{extra}{BODY_END}")
    body = f"Copied from the audit's draft:\n\n{copy}\n\nMy own notes.\n"
    return art.seed_issue(OWNER, NAME, "my copy", body, labels=LABELS, user=author)


def test_a_human_issue_with_a_copied_marker_is_byte_identical_after_open_all_and_sync(
    art: GitHubSandbox, root: Path
) -> None:
    number = _copied(art, 7)
    before = art.get_issue(OWNER, NAME, number)
    opened = artbot(art, root, "open", "--all")
    assert opened.exit_code == 0, opened.output + opened.stderr
    assert f"#{number} carries artbot's marker but was written by @alice" in opened.output
    synced = artbot(art, root, "sync")
    assert synced.exit_code == 0, synced.output + synced.stderr
    after = art.get_issue(OWNER, NAME, number)
    assert {k: after[k] for k in ("body", "title", "state", "labels", "updated_at")} == {
        k: before[k] for k in ("body", "title", "state", "labels", "updated_at")
    }
    assert not any(f"/issues/{number}" in w for w in writes(art))
    # artbot filed its own issue for item 7 and links that one, not the copy.
    [own] = [i for i in issues_for(art, 7, state=None) if i["number"] != number]
    assert item_line(checklist(art), 7).endswith(f"#{own['number']}")


def test_artbots_issue_is_never_closed_as_a_duplicate_of_a_lower_human_copy(
    art: GitHubSandbox, root: Path
) -> None:
    copy = _copied(art, 5)  # the lower number: by marker alone it would be the one kept
    assert artbot(art, root, "open", "--item", "5").exit_code == 0
    [own] = [i for i in issues_for(art, 5) if i["number"] != copy]
    again = artbot(art, root, "open", "--item", "5")
    assert again.exit_code == 0, again.output
    for number in (own["number"], copy):
        assert art.get_issue(OWNER, NAME, number)["state"] == "open"
    assert "as a duplicate" not in again.output


def test_a_tracking_issue_quoting_a_whole_artbot_body_is_not_adopted(
    art: GitHubSandbox, root: Path
) -> None:
    body = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.edit_issue(OWNER, NAME, TRACKING, body=body + "\n" + filed_body(7), labels=list(LABELS))
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 0, result.output
    assert "is the tracking issue" in result.output
    [own] = [i for i in issues_for(art, 7) if i["number"] != TRACKING]
    assert item_line(checklist(art), 7).endswith(f"#{own['number']}")


def test_dry_run_lists_foreign_issues(art: GitHubSandbox, root: Path) -> None:
    number = _copied(art, 8)
    result = artbot(art, root, "open", "--item", "8", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    assert f'"issue": {number}' in result.output and '"action": "Foreign"' in result.output
    assert writes(art) == []


@pytest.fixture
def maintainer(art: GitHubSandbox) -> GitHubSandbox:
    """The same repository, now reached with a maintainer's own token."""
    art.login = "maintainer"
    return art


def test_a_maintainers_token_configured_owns_what_it_filed_and_never_asks_who_it_is(
    maintainer: GitHubSandbox, root: Path
) -> None:
    me = ("--author", "maintainer")
    assert artbot(maintainer, root, "open", "--item", "4", *me).exit_code == 0
    result = artbot(maintainer, root, "sync", *me)
    assert result.exit_code == 0, result.output
    assert "left alone" not in result.output
    assert not any(r.path == "/user" for r in maintainer.requests.snapshot())


def test_a_misconfigured_login_stops_after_one_create_and_the_next_run_finds_it(
    maintainer: GitHubSandbox, root: Path
) -> None:
    """Configured as github-actions[bot] (the default) but writing as a person: the run
    stops right after the create GitHub names another author on (exit 1, what to set), and
    the run configured right finds that issue by its marker instead of filing it again."""
    result = artbot(maintainer, root, "open", "--item", "4")
    assert result.exit_code == 1, result.output
    assert "--author maintainer" in result.output + result.stderr
    assert len(issues_for(maintainer, 4, state=None)) == 1
    result = artbot(maintainer, root, "open", "--item", "4", "--author", "maintainer")
    assert result.exit_code == 0, result.output
    assert "already filed" in result.output
    assert len(issues_for(maintainer, 4, state=None)) == 1


def test_issues_the_action_filed_stay_artbots_when_a_maintainer_runs_it(
    art: GitHubSandbox, root: Path
) -> None:
    """The record keeps the logins configured before: a new one does not orphan them."""
    assert artbot(art, root, "open", "--item", "4").exit_code == 0  # as github-actions[bot]
    art.login = "maintainer"
    result = artbot(art, root, "open", "--item", "4", "--author", "maintainer")
    assert result.exit_code == 0, result.output
    assert "already filed" in result.output


def test_author_option_adds_an_identity(art: GitHubSandbox, root: Path) -> None:
    number = _copied(art, 6, author="release-bot", extra="stale line\n")
    result = artbot(art, root, "sync", "--author", "release-bot")
    assert result.exit_code == 0, result.output
    assert "left alone" not in result.output
    assert any(f"/issues/{number}" in w for w in writes(art))  # its owned region is kept up


# -- the tracking issue, before the first write --------------------------------------------


def _nothing_filed(art: GitHubSandbox) -> None:
    assert writes(art) == []
    assert issues_for(art, 7, state=None) == []


def test_a_missing_tracking_issue_stops_open_before_anything_is_filed(
    art: GitHubSandbox, root: Path
) -> None:
    result = artbot(art, root, "open", "--item", "7", "--tracking-issue", "4242")
    assert result.exit_code == 2, result.output
    assert "tracking issue #4242 does not exist" in result.output + result.stderr
    _nothing_filed(art)


def test_a_deleted_tracking_issue_stops_sync_before_any_write(art: TestSandbox, root: Path) -> None:
    art.delete_issue(OWNER, NAME, TRACKING)
    result = artbot(art, root, "sync")
    assert result.exit_code == 2, result.output
    assert "was deleted" in result.output + result.stderr
    assert writes(art) == []


def test_a_pull_request_as_tracking_issue_is_refused(art: GitHubSandbox, root: Path) -> None:
    pr = art.seed_issue(OWNER, NAME, "a PR", "diff", pull_request=True)
    art.requests.clear()
    result = artbot(art, root, "open", "--item", "7", "--tracking-issue", str(pr))
    assert result.exit_code == 2, result.output
    assert "is a pull request" in result.output + result.stderr
    _nothing_filed(art)


def test_a_locked_tracking_issue_is_refused(art: GitHubSandbox, root: Path) -> None:
    from github import Auth, Github

    gh = Github(base_url=art.api_url, auth=Auth.Token(CANARY))
    gh.get_repo(f"{OWNER}/{NAME}").get_issue(TRACKING).lock("resolved")
    art.requests.clear()
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 2, result.output
    assert "is locked" in result.output + result.stderr
    _nothing_filed(art)


def test_two_start_markers_in_the_tracking_issue_stop_open_before_the_create(
    art: GitHubSandbox, root: Path
) -> None:
    body = art.get_issue(OWNER, NAME, TRACKING)["body"]
    start = "<!-- artbot:checklist:start -->"
    art.edit_issue(OWNER, NAME, TRACKING, body=f"{body}\n{start}\n\n{start}\n")
    art.requests.clear()
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output + result.stderr
    _nothing_filed(art)


def test_every_body_written_was_read_fresh_just_before(art: GitHubSandbox, root: Path) -> None:
    """No 304 from the ETag cache decides what is written (#12 item 7)."""
    assert artbot(art, root, "open", "--all").exit_code == 0
    numbers = {i["number"] for i in issues_for(art, 4)}
    art.edit_issue(
        OWNER,
        NAME,
        min(numbers),
        body=art.get_issue(OWNER, NAME, min(numbers))["body"].replace(
            "<!-- artbot:body:end -->", "stale\n<!-- artbot:body:end -->"
        ),
    )
    body = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.edit_issue(OWNER, NAME, TRACKING, body=body.replace("— #", "— # "))
    art.requests.clear()
    assert artbot(art, root, "sync").exit_code == 0
    log = art.requests.snapshot()
    # Issue bodies (a sub-issue reorder, PATCH .../sub_issues/priority, writes no body).
    patched = [k for k, r in enumerate(log) if r.method == "PATCH" and "/sub_issues" not in r.path]
    assert patched
    for k in patched:
        reads = [r for r in log[:k] if r.method == "GET" and r.path == log[k].path]
        assert reads and reads[-1].status == 200, (log[k].path, [r.status for r in reads])


def test_an_issue_with_the_tracking_label_is_never_a_findings_issue() -> None:
    """#15: the tracking issue is in the labelled list now; its label keeps a copy of it (or
    of an artbot body quoted in it) from being taken for an item's issue."""
    assert AUDIT.tracking_label
    copy = _issue(77, filed_body(7), ACTIONS_BOT, labels=(*LABELS, AUDIT.tracking_label))
    kept, foreign = claim([copy], AUDIT, (ACTIONS_BOT,), TRACKING)
    assert kept[0].marker is None and "tracking label" in foreign[0].why
