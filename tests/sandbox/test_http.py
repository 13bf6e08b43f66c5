"""The sandbox, driven over real HTTP by PyGithub (and by raw requests where PyGithub hides
what is under test): issues, comments and labels, validation and auth, persistence and
concurrency, and its JSON checked against GitHub's published REST schema. Conditional
requests, rate limits and injected faults: tests/sandbox/test_faults.py; what the two share:
tests/helpers/sandbox_client.py."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from github import (
    BadCredentialsException,
    Github,
    GithubException,
    UnknownObjectException,
)
from pydantic import BaseModel

from artbot.sandbox import MAX_BODY_CHARS, GitHubSandbox
from tests.helpers.sandbox_client import (
    API,
    NAME,
    OWNER,
    REPO,
    TOKEN,
    client,
    raw,
    repo_client,
    schema_models,
    unknown_keys,
)
from tests.helpers.testsandbox import TestSandbox

gh = pytest.fixture(repo_client, name="gh")


# --- issues --------------------------------------------------------------------------------


def test_create_get_and_edit_issue(sandbox: TestSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    created = repo.create_issue(title="Item 4", body="first", labels=["numerics-audit"])
    assert created.number == 1
    assert created.user.login == sandbox.login
    assert [lb.name for lb in created.labels] == ["numerics-audit"]  # created on the fly
    assert created.html_url == f"{sandbox.api_url}/{REPO}/issues/1"
    assert created.url == f"{sandbox.api_url}{API}/issues/1"

    issue = repo.get_issue(1)
    assert (issue.title, issue.body, issue.state, issue.closed_at) == (
        "Item 4",
        "first",
        "open",
        None,
    )

    before = issue.updated_at
    issue.edit(body="second")
    assert issue.body == "second" and issue.updated_at > before

    issue.edit(state="closed", state_reason="not_planned")
    assert (issue.state, issue.state_reason) == ("closed", "not_planned")
    assert issue.closed_at == issue.updated_at
    assert issue.closed_by is not None and issue.closed_by.login == sandbox.login

    issue.edit(state="open")
    assert (issue.state, issue.state_reason, issue.closed_at) == ("open", "reopened", None)

    # A maintainer closes it on the web: the client sees it on its next read.
    sandbox.set_issue_state(OWNER, NAME, 1, "closed")
    assert repo.get_issue(1).state_reason == "completed"
    assert sandbox.get_issue(OWNER, NAME, 1)["state"] == "closed"


def test_edit_that_changes_nothing_keeps_updated_at(sandbox: GitHubSandbox, gh: Github) -> None:
    issue = gh.get_repo(REPO).create_issue(title="same", body="same")
    stamp = issue.updated_at
    issue.edit(title="same", body="same")
    assert issue.updated_at == stamp


def test_list_filters_by_state_and_all_labels(sandbox: GitHubSandbox, gh: Github) -> None:
    sandbox.seed_issue(OWNER, NAME, "a", "", labels=["audit"])
    sandbox.seed_issue(OWNER, NAME, "ab", "", labels=["audit", "Bug"])
    sandbox.seed_issue(OWNER, NAME, "b closed", "", labels=["bug"], state="closed")
    sandbox.seed_issue(OWNER, NAME, "none", "")
    repo = gh.get_repo(REPO)

    def titles(**kwargs: Any) -> list[str]:
        return sorted(i.title for i in repo.get_issues(**kwargs))

    assert titles() == ["a", "ab", "none"]  # open by default
    assert titles(state="closed") == ["b closed"]
    assert titles(state="all", labels=["bug"]) == ["ab", "b closed"]  # case-insensitive
    assert titles(state="all", labels=["audit", "bug"]) == ["ab"]  # AND, not OR
    assert titles(labels=["missing"]) == []
    assert raw(sandbox, "GET", f"{API}/issues?state=bogus").status_code == 422


def test_pagination_follows_link_headers_across_pages(sandbox: GitHubSandbox, gh: Github) -> None:
    for n in range(250):
        sandbox.seed_issue(OWNER, NAME, f"issue {n}", "", labels=["audit"], pull_request=n == 7)
    sandbox.requests.clear()

    issues = list(gh.get_repo(REPO).get_issues(state="all", labels=["audit"]))

    assert sorted(i.number for i in issues) == list(range(1, 251))
    pages = [r.query.get("page", "1") for r in sandbox.requests if r.path == f"{API}/issues"]
    assert pages == ["1", "2", "3"]
    assert gh.get_repo(REPO).get_issues(state="all").totalCount == 250  # reads rel="last"

    middle = raw(sandbox, "GET", f"{API}/issues?state=all&per_page=100&page=2")
    assert len(middle.json()) == 100
    links = {rel: url for rel, url in ((v["rel"], v["url"]) for v in middle.links.values())}
    assert set(links) == {"prev", "next", "last", "first"}
    assert links["next"].startswith(f"{sandbox.api_url}{API}/issues?")
    assert "page=3" in links["next"] and "per_page=100" in links["next"]
    assert "page=1" in links["first"] and "page=3" in links["last"]
    default = raw(sandbox, "GET", f"{API}/issues")
    assert len(default.json()) == 30 and "page=9" in default.links["last"]["url"]
    assert len(raw(sandbox, "GET", f"{API}/issues?per_page=500").json()) == 100


def test_pull_requests_appear_in_issue_list_flagged(sandbox: GitHubSandbox, gh: Github) -> None:
    sandbox.seed_issue(OWNER, NAME, "an issue", "")
    sandbox.seed_issue(OWNER, NAME, "a pull request", "", pull_request=True)
    listed = {i.title: i for i in gh.get_repo(REPO).get_issues()}
    assert listed["an issue"].pull_request is None
    assert listed["a pull request"].pull_request is not None
    assert listed["a pull request"].html_url.endswith(f"/{REPO}/pull/2")
    assert "pull_request" in raw(sandbox, "GET", f"{API}/issues/2").json()


def test_sort_direction_and_since() -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    with GitHubSandbox(clock=lambda: now[0]) as sandbox:
        sandbox.create_repo(OWNER, NAME)
        for n in range(3):
            sandbox.seed_issue(OWNER, NAME, f"issue {n + 1}", "")
            now[0] += timedelta(hours=1)
        sandbox.seed_comment(OWNER, NAME, 2, "a comment")  # also bumps #2's updated_at
        now[0] += timedelta(hours=1)
        sandbox.edit_issue(OWNER, NAME, 1, body="edited")
        g = client(sandbox)
        repo = g.get_repo(REPO)

        def numbers(**kwargs: Any) -> list[int]:
            return [i.number for i in repo.get_issues(**kwargs)]

        assert numbers() == [3, 2, 1]  # created, newest first
        assert numbers(direction="asc") == [1, 2, 3]
        assert numbers(sort="updated") == [1, 2, 3]
        assert numbers(sort="comments") == [2, 3, 1]
        assert numbers(since=datetime(2026, 1, 1, 3, tzinfo=UTC)) == [2, 1]
        assert numbers(since=datetime(2026, 1, 1, 4, tzinfo=UTC)) == [1]
        g.close()


def test_deleted_issue_is_gone_and_missing_one_not_found(sandbox: TestSandbox, gh: Github) -> None:
    sandbox.seed_issue(OWNER, NAME, "doomed", "")
    sandbox.delete_issue(OWNER, NAME, 1)
    repo = gh.get_repo(REPO)
    with pytest.raises(GithubException) as gone:
        repo.get_issue(1)
    assert gone.value.status == 410
    with pytest.raises(UnknownObjectException):
        repo.get_issue(2)
    with pytest.raises(UnknownObjectException):
        gh.get_repo("OpenPipe/nope")
    assert list(repo.get_issues(state="all")) == []


# --- comments and labels ---------------------------------------------------------------------


def test_comments_create_list_and_edit(sandbox: GitHubSandbox, gh: Github) -> None:
    issue = gh.get_repo(REPO).create_issue(title="t")
    stamp = issue.updated_at
    comment = issue.create_comment("first look")
    issue.create_comment("second look")
    assert [c.body for c in issue.get_comments()] == ["first look", "second look"]
    comment.edit("first look, revised")
    assert comment.body == "first look, revised"
    assert comment.html_url.endswith(f"/{REPO}/issues/1#issuecomment-{comment.id}")
    refreshed = gh.get_repo(REPO).get_issue(1)
    assert refreshed.comments == 2 and refreshed.updated_at > stamp
    assert raw(sandbox, "GET", f"{API}/issues/comments/{comment.id}").json()["body"] == (
        "first look, revised"
    )


def test_labels_create_get_list_and_duplicates(sandbox: GitHubSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    made = repo.create_label("numerics audit", "#C5DEF5", "filed by artbot")
    assert (made.name, made.color, made.description) == (
        "numerics audit",
        "c5def5",
        "filed by artbot",
    )
    assert repo.get_label("numerics audit").id == made.id  # a space in the URL path
    for duplicate in ("numerics audit", "Numerics Audit"):
        with pytest.raises(GithubException) as exc:
            repo.create_label(duplicate, "ffffff")
        assert exc.value.status == 422
        assert exc.value.data["errors"] == [
            {"resource": "Label", "code": "already_exists", "field": "name"}
        ]
    with pytest.raises(UnknownObjectException):
        repo.get_label("absent")
    issue = repo.create_issue(title="t")
    issue.add_to_labels("numerics audit", "item-4")
    assert sorted(lb.name for lb in repo.get_issue(1).labels) == ["item-4", "numerics audit"]
    assert sorted(lb.name for lb in repo.get_labels()) == ["item-4", "numerics audit"]


# --- validation and auth -----------------------------------------------------------------------


def test_body_over_65536_characters_is_rejected(sandbox: GitHubSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    issue = repo.create_issue(title="fits", body="x" * MAX_BODY_CHARS)
    with pytest.raises(GithubException) as exc:
        repo.create_issue(title="too long", body="é" * (MAX_BODY_CHARS + 1))
    assert exc.value.status == 422
    assert exc.value.data["message"] == "Validation Failed"
    assert exc.value.data["errors"] == [
        {
            "resource": "Issue",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    with pytest.raises(GithubException):
        issue.edit(body="x" * (MAX_BODY_CHARS + 1))
    with pytest.raises(GithubException) as comment:
        issue.create_comment("x" * (MAX_BODY_CHARS + 1))
    assert comment.value.data["errors"][0]["resource"] == "IssueComment"
    assert [i.number for i in repo.get_issues()] == [1]
    assert sandbox.get_issue(OWNER, NAME, 1)["body"] == "x" * MAX_BODY_CHARS


def test_missing_or_blank_title_is_rejected(sandbox: GitHubSandbox, gh: Github) -> None:
    missing = raw(sandbox, "POST", f"{API}/issues", {"body": "no title"})
    assert missing.status_code == 422 and "title" in missing.json()["message"]
    blank = raw(sandbox, "POST", f"{API}/issues", {"title": "  "})
    assert blank.json()["errors"] == [
        {"resource": "Issue", "code": "missing_field", "field": "title"}
    ]
    empty = raw(sandbox, "POST", f"{API}/issues")
    assert empty.status_code == 422  # no body has no title either
    bad_json = requests.post(
        f"{sandbox.api_url}{API}/issues",
        data="{not json",
        headers={"Authorization": f"token {TOKEN}"},
        timeout=10,
    )
    assert (bad_json.status_code, bad_json.json()["message"]) == (400, "Problems parsing JSON")
    assert raw(sandbox, "GET", f"{API}/issues").json() == []


def test_writes_need_a_token_and_bad_tokens_are_refused(sandbox: GitHubSandbox) -> None:
    sandbox.create_repo(OWNER, NAME)
    anonymous = client(sandbox, token=None)
    repo = anonymous.get_repo(REPO)  # reads work without a token
    assert repo.name == NAME
    assert anonymous.get_rate_limit().resources.core.limit == 60
    with pytest.raises(GithubException) as exc:
        repo.create_issue(title="t")
    assert exc.value.status == 401 and exc.value.data["message"] == "Requires authentication"
    anonymous.close()

    with GitHubSandbox(tokens=["the-right-one"]) as strict:
        strict.create_repo(OWNER, NAME)
        with pytest.raises(BadCredentialsException):
            client(strict, token="a-wrong-one").get_repo(REPO)
        assert client(strict, token="the-right-one").get_repo(REPO).name == NAME


def test_token_is_never_logged_stored_or_echoed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.json"
    with TestSandbox(state_file=state) as persisted:
        persisted.create_repo(OWNER, NAME)
        persisted.inject_fault("POST", "/issues$", 502)
        responses = [
            raw(persisted, "POST", f"{API}/issues", {"title": "t"}),
            raw(persisted, "POST", f"{API}/issues", {"title": "t", "body": "b"}),
            raw(persisted, "GET", f"{API}/issues/99"),
            raw(persisted, "GET", f"{API}/issues?access_token={TOKEN}"),
            raw(persisted, "GET", "/rate_limit", headers={"Authorization": f"Bearer {TOKEN}"}),
        ]
        log = repr(persisted.requests.snapshot())
    assert [r.status_code for r in responses] == [502, 201, 404, 200, 200]
    for response in responses:
        assert TOKEN not in response.text
        assert all(TOKEN not in value for value in response.headers.values())
    captured = capfd.readouterr()
    assert TOKEN not in captured.out + captured.err + log
    assert TOKEN not in state.read_text()


# --- persistence, concurrency, running it ---------------------------------------------------------


def test_state_survives_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "sandbox.json"
    with GitHubSandbox(state_file=state) as first:
        first.create_repo(OWNER, NAME)
        g = client(first)
        g.get_repo(REPO).create_issue(title="kept", labels=["audit"]).create_comment("c")
        g.close()
    with GitHubSandbox(state_file=state) as second:
        g = client(second)
        repo = g.get_repo(REPO)
        issue = repo.get_issue(1)
        assert (issue.title, [lb.name for lb in issue.labels], issue.comments) == (
            "kept",
            ["audit"],
            1,
        )
        assert issue.url.startswith(second.api_url)
        later = repo.create_issue(title="next", labels=["audit"])
        assert later.number == 2 and later.id > issue.id
        g.close()


def test_concurrent_creates_get_distinct_numbers(sandbox: GitHubSandbox) -> None:
    sandbox.create_repo(OWNER, NAME)
    results: list[int] = []
    lock = threading.Lock()

    def create(n: int) -> None:
        for k in range(10):
            number = raw(sandbox, "POST", f"{API}/issues", {"title": f"{n}-{k}"}).json()["number"]
            with lock:
                results.append(number)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(1, 41))


def test_artbot_sandbox_serves_in_the_foreground(tmp_path: Path) -> None:
    state = tmp_path / "demo.json"
    command = [sys.executable, "-m", "artbot", "sandbox", "--state", str(state), "--repo", REPO]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first_line = process.stdout.readline()
        url = first_line.split()[-1]
        assert url.startswith("http://127.0.0.1:")
        assert requests.get(f"{url}{API}", timeout=10).json()["full_name"] == REPO
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert json.loads(state.read_text())["repos"][0]["name"] == NAME


# --- the JSON against GitHub's published schema -------------------------------------------------


def test_payloads_match_githubs_published_schema(sandbox: TestSandbox) -> None:
    m = schema_models()
    sandbox.create_repo(OWNER, NAME, description="RL for LLMs")
    number = sandbox.seed_issue(OWNER, NAME, "t", "b", labels=["numerics audit"])
    sandbox.edit_issue(OWNER, NAME, number, assignees=[sandbox.login])
    sandbox.set_issue_state(OWNER, NAME, number, "closed", "not_planned")
    sandbox.seed_issue(OWNER, NAME, "a pull request", None, pull_request=True)
    comment = sandbox.seed_comment(OWNER, NAME, number, "a comment", user="someone-else")
    sandbox.seed_issue(OWNER, NAME, "gone", "")
    sandbox.delete_issue(OWNER, NAME, 3)

    def payload(method: str, path: str, body: Any = None, token: str | None = TOKEN) -> Any:
        return raw(sandbox, method, path, body, token=token).json()

    single: list[tuple[type[BaseModel], Any]] = [
        (m.FullRepository, payload("GET", API)),
        (m.FullRepository, payload("GET", API, token=None)),
        (m.Issue, payload("GET", f"{API}/issues/{number}")),
        (m.Issue, payload("GET", f"{API}/issues/2")),
        (m.Issue, payload("POST", f"{API}/issues", {"title": "new", "labels": ["x"]})),
        (m.Issue, payload("PATCH", f"{API}/issues/{number}", {"title": "renamed"})),
        (m.Label, payload("GET", f"{API}/labels/numerics%20audit")),
        (m.Label, payload("POST", f"{API}/labels", {"name": "y", "description": "why"})),
        (m.IssueComment, payload("GET", f"{API}/issues/comments/{comment}")),
        (m.IssueComment, payload("POST", f"{API}/issues/{number}/comments", {"body": "hi"})),
        (m.RateLimitOverview, payload("GET", "/rate_limit")),
        (m.BasicError, payload("GET", f"{API}/issues/99")),
        (m.BasicError, payload("GET", f"{API}/issues/3")),
        (m.BasicError, payload("POST", f"{API}/issues", {"title": "t"}, token=None)),
    ]
    listed: list[tuple[type[BaseModel], Any]] = [
        (m.Issue, payload("GET", f"{API}/issues?state=all")),
        (m.Label, payload("GET", f"{API}/labels")),
        (m.Label, payload("POST", f"{API}/issues/{number}/labels", {"labels": ["z"]})),
        (m.IssueComment, payload("GET", f"{API}/issues/{number}/comments")),
    ]
    for model, items in listed:
        assert isinstance(items, list) and items, model
        single += [(model, item) for item in items]
    for model, data in single:
        assert unknown_keys(model, data) == [], (model.__name__, data)

    pr = payload("GET", f"{API}/issues/2")
    assert m.Issue.model_validate(pr).pull_request is not None
    # GitHub sends "status" in every error body; the schema lists it for BasicError only.
    for body in ({"title": "t", "body": "x" * (MAX_BODY_CHARS + 1)}, {"title": ""}):
        error = payload("POST", f"{API}/issues", body)
        assert unknown_keys(m.ValidationError, error) == ["$.status"]
    duplicate = payload("POST", f"{API}/labels", {"name": "Y"})
    assert unknown_keys(m.ValidationError, duplicate) == ["$.status"]
