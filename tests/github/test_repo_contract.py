"""The adapter's contract: what :class:`artbot.github.client.GitHubRepo` promises the run,
pinned over HTTP (PyGithub) against the loopback sandbox. The run is written against this class
and tested through it; there is no in-memory fake to drift from it. Only the interface is used
here: no sandbox internals.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from artbot.errors import SubIssueRefused
from artbot.github.client import EtagCache, GitHubRepo
from artbot.github.client import GitHubRepo as Repo
from artbot.records.marker import BODY_END, BODY_START, IssueMarker
from artbot.sandbox import GitHubSandbox

OWNER, NAME = "OpenPipe", "ART"
MARKED = f"text\n\n{BODY_START}\n{IssueMarker('e2a406a', 7)}\n{BODY_END}\n"


@pytest.fixture
def repo(sandbox: GitHubSandbox) -> Repo:
    sandbox.create_repo(OWNER, NAME)
    return GitHubRepo(
        f"{OWNER}/{NAME}", api_url=sandbox.api_url, token="ghp_contract", cache=EtagCache()
    )


def test_a_created_issue_reads_back_with_its_marker_and_labels(repo: Repo) -> None:
    made = repo.create_issue("seven", MARKED, ["audit", "numerics"])
    again = repo.get_issue(made.number, fresh=True)
    for issue in (made, again):
        assert (issue.title, issue.body, issue.state) == ("seven", MARKED, "open")
        assert set(issue.labels) == {"audit", "numerics"}
        assert issue.marker == IssueMarker("e2a406a", 7)
        assert issue.id is not None and issue.id != issue.number
    assert again.sub_issues is not None and again.sub_issues.total == 0


def test_list_issues_needs_every_label_and_includes_closed_ones(repo: Repo) -> None:
    both = repo.create_issue("both", "b", ["audit", "numerics"])
    one = repo.create_issue("one", "o", ["audit"])
    closed = repo.create_issue("closed", "c", ["audit", "numerics"])
    repo.edit_issue(closed.number, state="closed", state_reason="not_planned")
    assert [i.number for i in repo.list_issues(["audit", "numerics"])] == [
        both.number,
        closed.number,
    ]
    assert [i.number for i in repo.list_issues(["audit"])] == [
        both.number,
        one.number,
        closed.number,
    ]
    [seen] = [i for i in repo.list_issues(["numerics"]) if i.number == closed.number]
    assert (seen.state, seen.state_reason) == ("closed", "not_planned")


def test_edit_returns_the_edited_issue_and_rereads_the_marker(repo: Repo) -> None:
    made = repo.create_issue("plain", "no marker", [])
    assert made.marker is None
    edited = repo.edit_issue(made.number, title="marked", body=MARKED)
    assert (edited.title, edited.body, edited.marker) == (
        "marked",
        MARKED,
        IssueMarker("e2a406a", 7),
    )
    assert repo.get_issue(made.number, fresh=True).marker == IssueMarker("e2a406a", 7)


def test_labels_are_added_once_and_an_existing_label_is_no_error(repo: Repo) -> None:
    made = repo.create_issue("x", "x", ["audit"])
    repo.add_labels(made.number, ["audit", "numerics"])
    assert sorted(repo.get_issue(made.number, fresh=True).labels) == ["audit", "numerics"]
    repo.create_label("item-7", "ededed", "one finding")
    repo.create_label("item-7", "ededed", "one finding")  # exists: a 422, taken as done
    assert repo.create_issue("y", "y", ["item-7"]).labels == ("item-7",)


def test_comments_list_back_in_order(repo: Repo) -> None:
    made = repo.create_issue("x", "x", [])
    assert repo.list_comments(made.number) == []
    repo.post_comment(made.number, "first")
    repo.post_comment(made.number, "second")
    assert [c.get("body") for c in repo.list_comments(made.number)] == ["first", "second"]


def _ids(repo: Repo, *numbers: int) -> list[int]:
    ids = [repo.get_issue(n).id for n in numbers]
    assert all(i is not None for i in ids)
    return [i for i in ids if i is not None]


def test_sub_issues_keep_their_order_move_and_leave(repo: Repo) -> None:
    parent, a, b, c = (repo.create_issue(t, t, []).number for t in "pabc")
    ia, ib, ic = _ids(repo, a, b, c)
    for child in (ia, ib, ic):
        repo.add_sub_issue(parent, child, replace_parent=False)
    order: Callable[[], list[int]] = lambda: [i.number for i in repo.list_sub_issues(parent)]  # noqa: E731
    assert order() == [a, b, c]
    repo.reprioritize_sub_issue(parent, ic, after_id=None, before_id=ia)
    assert order() == [c, a, b]
    repo.reprioritize_sub_issue(parent, ic, after_id=ib, before_id=None)
    assert order() == [a, b, c]
    repo.remove_sub_issue(parent, ib)
    assert order() == [a, c]
    assert repo.parent_of(a) == (f"{OWNER}/{NAME}", parent)
    assert repo.parent_of(b) is None
    repo.edit_issue(a, state="closed")
    summary = repo.get_issue(parent, fresh=True).sub_issues
    assert summary is not None and (summary.total, summary.completed) == (2, 1)


def test_a_second_parent_is_refused_unless_replacing(repo: Repo) -> None:
    first, second, child = (repo.create_issue(t, t, []).number for t in ("one", "two", "kid"))
    [kid] = _ids(repo, child)
    repo.add_sub_issue(first, kid, replace_parent=False)
    with pytest.raises(SubIssueRefused):
        repo.add_sub_issue(second, kid, replace_parent=False)
    assert repo.parent_of(child) == (f"{OWNER}/{NAME}", first)
    repo.add_sub_issue(second, kid, replace_parent=True)
    assert repo.parent_of(child) == (f"{OWNER}/{NAME}", second)
    assert [i.number for i in repo.list_sub_issues(first)] == []


def test_permission_of_the_owner_the_writer_and_a_stranger(repo: Repo) -> None:
    login = repo.create_issue("x", "x", []).author  # the login artbot writes as
    assert login
    assert repo.permission(login) == "write"
    assert repo.permission(OWNER) == "admin"
    assert repo.permission("someone-else") == "read"
