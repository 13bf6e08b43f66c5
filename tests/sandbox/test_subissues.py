"""The sandbox's sub-issue endpoints, driven by PyGithub (and by raw requests where PyGithub
cannot send what is under test), and their JSON checked against GitHub's published schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from github import Github, GithubException
from github.Issue import Issue
from pydantic import BaseModel

from artbot.sandbox import GitHubSandbox
from artbot.sandbox.subissues import MAX_SUB_ISSUES
from tests.helpers.sandbox_client import API, NAME, OWNER, REPO, client, raw, unknown_keys
from tests.helpers.testsandbox import TestSandbox


@pytest.fixture
def gh(sandbox: GitHubSandbox) -> Iterator[Github]:
    sandbox.create_repo(OWNER, NAME)
    for title in ("parent", "a", "b", "c", "other parent"):
        sandbox.seed_issue(OWNER, NAME, title, "body")
    g = client(sandbox)
    yield g
    g.close()


def issue(gh: Github, number: int) -> Issue:
    return gh.get_repo(REPO).get_issue(number)


def test_add_list_reorder_and_remove_as_github_documents_them(
    sandbox: TestSandbox, gh: Github
) -> None:
    parent, a, b, c = (issue(gh, n) for n in (1, 2, 3, 4))
    reply = parent.add_sub_issue(a.id)  # by id, not number; the reply is the parent
    assert reply.number == 1 and reply.sub_issues_summary.total == 1
    parent.add_sub_issue(b.id)
    parent.add_sub_issue(c.id)
    assert [i.number for i in parent.get_sub_issues()] == [2, 3, 4]  # in the order added

    parent.prioritize_sub_issue(a.id, c.id)  # after c
    assert sandbox.sub_issues(OWNER, NAME, 1) == [3, 4, 2]
    moved = raw(sandbox, "PATCH", f"{API}/issues/1/sub_issues/priority",
                {"sub_issue_id": a.id, "before_id": b.id})  # fmt: skip
    assert moved.status_code == 200 and sandbox.sub_issues(OWNER, NAME, 1) == [2, 3, 4]

    parent.remove_sub_issue(b.id)
    assert sandbox.sub_issues(OWNER, NAME, 1) == [2, 4]
    sandbox.set_issue_state(OWNER, NAME, 2, "closed")
    summary = issue(gh, 1).sub_issues_summary
    assert (summary.total, summary.completed, summary.percent_completed) == (2, 1, 50)


def test_each_issue_knows_its_parent(sandbox: GitHubSandbox, gh: Github) -> None:
    issue(gh, 1).add_sub_issue(issue(gh, 2).id)
    parent = raw(sandbox, "GET", f"{API}/issues/2/parent")
    assert parent.status_code == 200 and parent.json()["number"] == 1
    assert issue(gh, 2).raw_data["parent_issue_url"] == f"{sandbox.api_url}{API}/issues/1"
    assert raw(sandbox, "GET", f"{API}/issues/3/parent").status_code == 404  # no parent
    assert "parent_issue_url" not in issue(gh, 3).raw_data


def test_a_second_parent_is_refused_unless_replace_parent(
    sandbox: GitHubSandbox, gh: Github
) -> None:
    a = issue(gh, 2)
    issue(gh, 1).add_sub_issue(a.id)
    with pytest.raises(GithubException) as refused:
        issue(gh, 5).add_sub_issue(a.id)
    assert refused.value.status == 422
    assert refused.value.data["errors"][0]["field"] == "sub_issue_id"
    assert sandbox.sub_issues(OWNER, NAME, 1) == [2]

    body = {"sub_issue_id": a.id, "replace_parent": True}
    assert raw(sandbox, "POST", f"{API}/issues/5/sub_issues", body).status_code == 201
    assert sandbox.sub_issues(OWNER, NAME, 1) == []
    assert sandbox.sub_issues(OWNER, NAME, 5) == [2]


def test_what_github_refuses(sandbox: GitHubSandbox, gh: Github) -> None:
    parent, a = issue(gh, 1), issue(gh, 2)
    parent.add_sub_issue(a.id)

    def post(number: int, body: Any) -> int:
        return raw(sandbox, "POST", f"{API}/issues/{number}/sub_issues", body).status_code

    assert post(1, {"sub_issue_id": a.id}) == 422  # already a sub-issue here
    assert post(1, {"sub_issue_id": parent.id}) == 422  # itself
    assert post(2, {"sub_issue_id": parent.id}) == 422  # its own ancestor
    assert post(1, {"sub_issue_id": 999_999}) == 422  # no such issue
    assert post(1, {"sub_issue_id": "7"}) == 422  # not an integer
    assert post(1, {}) == 422
    assert post(1, {"sub_issue_id": a.id, "replace_parent": "yes"}) == 422
    anonymous = raw(sandbox, "POST", f"{API}/issues/1/sub_issues", {"sub_issue_id": 3}, token=None)
    assert anonymous.status_code == 401

    def patch(body: Any) -> int:
        return raw(sandbox, "PATCH", f"{API}/issues/1/sub_issues/priority", body).status_code

    b = issue(gh, 3)
    assert patch({"sub_issue_id": a.id}) == 422  # neither after_id nor before_id
    assert patch({"sub_issue_id": a.id, "after_id": a.id}) == 422
    assert patch({"sub_issue_id": a.id, "after_id": b.id}) == 422  # b is not a sub-issue
    assert patch({"sub_issue_id": b.id, "after_id": a.id}) == 404
    gone = raw(sandbox, "DELETE", f"{API}/issues/1/sub_issue", {"sub_issue_id": b.id})
    assert gone.status_code == 404
    assert raw(sandbox, "GET", f"{API}/issues/99/sub_issues").status_code == 404


def test_another_owners_issue_cannot_be_a_sub_issue(sandbox: GitHubSandbox, gh: Github) -> None:
    sandbox.create_repo("someone", "else")
    elsewhere = sandbox.seed_issue("someone", "else", "theirs", "x")
    their_id = sandbox.get_issue("someone", "else", elsewhere)["id"]
    body = {"sub_issue_id": their_id}
    assert raw(sandbox, "POST", f"{API}/issues/1/sub_issues", body).status_code == 422
    # The same owner's other repository is fine.
    sandbox.create_repo(OWNER, "sibling")
    sibling = sandbox.seed_issue(OWNER, "sibling", "ours too", "x")
    body = {"sub_issue_id": sandbox.get_issue(OWNER, "sibling", sibling)["id"]}
    assert raw(sandbox, "POST", f"{API}/issues/1/sub_issues", body).status_code == 201


def test_at_most_100_sub_issues_per_parent(sandbox: GitHubSandbox, gh: Github) -> None:
    numbers = [sandbox.seed_issue(OWNER, NAME, f"t{k}", "x") for k in range(MAX_SUB_ISSUES + 1)]
    for n in numbers[:MAX_SUB_ISSUES]:
        sandbox.add_sub_issue(OWNER, NAME, 1, n)
    last = sandbox.get_issue(OWNER, NAME, numbers[-1])["id"]
    refused = raw(sandbox, "POST", f"{API}/issues/1/sub_issues", {"sub_issue_id": last})
    assert refused.status_code == 422 and "100" in refused.json()["errors"][0]["message"]
    listed = [i.number for i in issue(gh, 1).get_sub_issues()]  # two pages of 30 and more
    assert listed == numbers[:MAX_SUB_ISSUES]


def test_the_list_is_conditional(sandbox: GitHubSandbox, gh: Github) -> None:
    issue(gh, 1).add_sub_issue(issue(gh, 2).id)
    first = raw(sandbox, "GET", f"{API}/issues/1/sub_issues")
    etag = first.headers["ETag"]
    again = raw(sandbox, "GET", f"{API}/issues/1/sub_issues", headers={"If-None-Match": etag})
    assert again.status_code == 304
    sandbox.add_sub_issue(OWNER, NAME, 1, 3)
    changed = raw(sandbox, "GET", f"{API}/issues/1/sub_issues", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and len(changed.json()) == 2


def test_sub_issues_survive_a_restart(tmp_path: Any) -> None:
    state = tmp_path / "state.json"
    with GitHubSandbox(state_file=state) as first:
        first.create_repo(OWNER, NAME)
        for title in "pab":
            first.seed_issue(OWNER, NAME, title, "x")
        first.add_sub_issue(OWNER, NAME, 1, 3)
        first.add_sub_issue(OWNER, NAME, 1, 2)
    with GitHubSandbox(state_file=state) as second:
        assert second.sub_issues(OWNER, NAME, 1) == [3, 2]
        assert second.get_issue(OWNER, NAME, 1)["sub_issues_summary"]["total"] == 2


def test_an_enterprise_server_without_sub_issues() -> None:
    with GitHubSandbox(sub_issues=False) as old:
        old.create_repo(OWNER, NAME)
        old.seed_issue(OWNER, NAME, "parent", "x")
        old.seed_issue(OWNER, NAME, "child", "x")
        assert "sub_issues_summary" not in old.get_issue(OWNER, NAME, 1)
        child_id = old.get_issue(OWNER, NAME, 2)["id"]
        body = {"sub_issue_id": child_id}
        assert raw(old, "POST", f"{API}/issues/1/sub_issues", body).status_code == 404
        assert raw(old, "GET", f"{API}/issues/1/sub_issues").status_code == 404
        assert raw(old, "GET", f"{API}/issues/2/parent").status_code == 404


# --- the JSON against GitHub's published schema -------------------------------------------------


def test_sub_issue_payloads_match_githubs_published_schema(sandbox: TestSandbox) -> None:
    try:
        from githubkit_schemas.v2022_11_28 import models as m
    except ImportError as exc:  # e.g. hishel 2.0 breaks githubkit 0.16's import
        pytest.skip(f"GitHub's REST schema models (githubkit-schemas) unavailable: {exc}")
    sandbox.create_repo(OWNER, NAME)
    for title in ("parent", "a", "b"):
        sandbox.seed_issue(OWNER, NAME, title, "x")
    a, b = (sandbox.get_issue(OWNER, NAME, n)["id"] for n in (2, 3))
    sandbox.set_issue_state(OWNER, NAME, 3, "closed", "not_planned")

    def payload(method: str, path: str, body: Any = None) -> Any:
        return raw(sandbox, method, API + path, body).json()

    sent: list[tuple[type[BaseModel], Any]] = [
        (m.ReposOwnerRepoIssuesIssueNumberSubIssuesPostBody, {"sub_issue_id": a}),
        (m.Issue, payload("POST", "/issues/1/sub_issues", {"sub_issue_id": a})),
        (m.Issue, payload("POST", "/issues/1/sub_issues", {"sub_issue_id": b})),
        (
            m.Issue,
            payload("PATCH", "/issues/1/sub_issues/priority", {"sub_issue_id": b, "before_id": a}),
        ),  # fmt: skip
        (
            m.ReposOwnerRepoIssuesIssueNumberSubIssuesPriorityPatchBody,
            {"sub_issue_id": b, "after_id": a},
        ),  # fmt: skip
        (m.Issue, payload("GET", "/issues/2/parent")),
        (m.Issue, payload("GET", "/issues/2")),
        (m.ReposOwnerRepoIssuesIssueNumberSubIssueDeleteBody, {"sub_issue_id": b}),
        (m.Issue, payload("DELETE", "/issues/1/sub_issue", {"sub_issue_id": b})),
        (m.BasicError, payload("GET", "/issues/3/parent")),
    ]
    listed = payload("GET", "/issues/1/sub_issues") + payload("GET", "/issues?state=all")
    sent += [(m.Issue, item) for item in listed]
    for model, data in sent:
        assert unknown_keys(model, data) == [], (model.__name__, data)
    parent = m.Issue.model_validate(payload("GET", "/issues/1"))
    summary = parent.sub_issues_summary
    assert isinstance(summary, m.SubIssuesSummary) and summary.total == 1
    # GitHub sends "status" in every error body; the schema lists it for BasicError only.
    refused = payload("POST", "/issues/1/sub_issues", {"sub_issue_id": a})
    assert unknown_keys(m.ValidationError, refused) == ["$.status"]
    simple = payload("PATCH", "/issues/1/sub_issues/priority", {"sub_issue_id": a})
    assert unknown_keys(m.ValidationErrorSimple, simple) == ["$.status"]
