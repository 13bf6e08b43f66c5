"""The sandbox's conditional requests, rate limits and injected faults (server errors before
and after the write, secondary rate limits, 429, dropped connections), driven over real HTTP
by PyGithub and by raw requests; helpers shared with tests/sandbox/test_http.py are in
tests/helpers/sandbox_client.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import requests
from github import Github, GithubException, RateLimitExceededException

from artbot.sandbox import GitHubSandbox
from tests.helpers.sandbox_client import (
    API,
    NAME,
    OWNER,
    REPO,
    client,
    fast_retry,
    raw,
    repo_client,
    statuses,
)
from tests.helpers.testsandbox import TestSandbox

gh = pytest.fixture(repo_client, name="gh")


# --- conditional requests and rate limits ------------------------------------------------------


def test_etag_gives_304_that_costs_no_rate_limit(sandbox: GitHubSandbox) -> None:
    sandbox.create_repo(OWNER, NAME)
    sandbox.seed_issue(OWNER, NAME, "t", "b")
    first = raw(sandbox, "GET", f"{API}/issues/1")
    etag = first.headers["ETag"]
    remaining = int(first.headers["X-RateLimit-Remaining"])
    assert first.headers["X-RateLimit-Limit"] == "5000"
    assert first.headers["X-RateLimit-Used"] == "1"
    assert first.headers["X-RateLimit-Resource"] == "core"
    assert int(first.headers["X-RateLimit-Reset"]) > datetime.now(UTC).timestamp()
    assert first.headers["X-GitHub-Request-Id"]

    again = raw(sandbox, "GET", f"{API}/issues/1", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert int(again.headers["X-RateLimit-Remaining"]) == remaining

    sandbox.edit_issue(OWNER, NAME, 1, body="changed")
    changed = raw(sandbox, "GET", f"{API}/issues/1", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["ETag"] != etag
    assert int(changed.headers["X-RateLimit-Remaining"]) == remaining - 1
    assert [r.status for r in sandbox.requests] == [200, 304, 200]


def test_primary_rate_limit_runs_out() -> None:
    with GitHubSandbox(rate_limit=3) as limited:
        limited.create_repo(OWNER, NAME)
        g = client(limited)
        for _ in range(3):
            g.get_repo(REPO)
        with pytest.raises(RateLimitExceededException) as exc:
            g.get_repo(REPO)
        assert exc.value.status == 403
        core = g.get_rate_limit().resources.core  # asking is free, even when out
        assert (core.limit, core.remaining, core.used) == (3, 0, 3)
        g.close()


# --- faults -------------------------------------------------------------------------------------


def test_server_error_before_the_write_leaves_nothing(sandbox: TestSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    sandbox.inject_fault("POST", r"/issues$", 502)
    with pytest.raises(GithubException) as exc:
        repo.create_issue(title="t")
    assert exc.value.status == 502
    assert list(repo.get_issues(state="all")) == []
    assert repo.create_issue(title="t").number == 1  # the fault was used up
    assert statuses(sandbox, "POST", f"{API}/issues") == [502, 201]


def test_server_error_after_the_write_still_applies_it(sandbox: TestSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    sandbox.inject_fault("PATCH", r"/issues/1$", 500, after_write=True)
    sandbox.inject_fault("POST", r"/issues$", 502, after_write=True)
    with pytest.raises(GithubException) as exc:
        repo.create_issue(title="t")
    assert exc.value.status == 502
    assert sandbox.get_issue(OWNER, NAME, 1)["title"] == "t"  # a retry would file a duplicate
    with pytest.raises(GithubException):
        repo.get_issue(1).edit(state="closed")
    assert sandbox.get_issue(OWNER, NAME, 1)["state"] == "closed"


def test_secondary_rate_limit_without_retry_after(sandbox: TestSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    sandbox.inject_fault("POST", r"/issues$", "secondary_rate_limit")
    response = raw(sandbox, "POST", f"{API}/issues", {"title": "t"})
    assert response.status_code == 403 and "Retry-After" not in response.headers
    assert response.json()["message"].startswith("You have exceeded a secondary rate limit")

    sandbox.inject_fault("POST", r"/issues$", "secondary_rate_limit")
    with pytest.raises(RateLimitExceededException):
        repo.create_issue(title="t")

    sandbox.inject_fault("POST", r"/issues$", "secondary_rate_limit", times=2)
    retrying = client(sandbox, retry=fast_retry())
    assert retrying.get_repo(REPO).create_issue(title="t").number == 1
    assert statuses(sandbox, "POST", f"{API}/issues") == [403, 403, 403, 403, 201]
    retrying.close()


def test_secondary_rate_limit_with_retry_after(sandbox: TestSandbox, gh: Github) -> None:
    sandbox.inject_fault("GET", r"/issues$", "secondary_rate_limit", retry_after=7)
    response = raw(sandbox, "GET", f"{API}/issues")
    assert (response.status_code, response.headers["Retry-After"]) == (403, "7")

    sandbox.inject_fault("GET", r"/issues$", "secondary_rate_limit", retry_after=0)
    retrying = client(sandbox, retry=fast_retry())
    assert list(retrying.get_repo(REPO).get_issues()) == []
    assert statuses(sandbox, "GET", f"{API}/issues") == [403, 403, 200]
    retrying.close()


def test_too_many_requests(sandbox: TestSandbox, gh: Github) -> None:
    sandbox.inject_fault("*", r"/issues$", 429, retry_after=3)
    response = raw(sandbox, "GET", f"{API}/issues")
    assert (response.status_code, response.headers["Retry-After"]) == (429, "3")
    sandbox.inject_fault("POST", r"/issues$", 429)
    with pytest.raises(GithubException) as exc:
        gh.get_repo(REPO).create_issue(title="t")
    assert exc.value.status == 429


def test_dropped_connection_before_and_after_the_write(sandbox: TestSandbox, gh: Github) -> None:
    repo = gh.get_repo(REPO)
    sandbox.inject_fault("POST", r"/issues$", "drop")
    with pytest.raises(requests.exceptions.ConnectionError):
        repo.create_issue(title="lost")
    assert list(repo.get_issues(state="all")) == []

    sandbox.inject_fault("POST", r"/issues$", "drop", after_write=True)
    with pytest.raises(requests.exceptions.ConnectionError):
        repo.create_issue(title="landed")
    assert [i.title for i in repo.get_issues()] == ["landed"]
    assert statuses(sandbox, "POST", f"{API}/issues") == [0, 0]


def test_fault_matching_counts_and_validation(sandbox: TestSandbox, gh: Github) -> None:
    sandbox.inject_fault("POST", r"/issues$", 503, times=2)
    assert raw(sandbox, "GET", f"{API}/issues").status_code == 200  # other method: untouched
    codes = [raw(sandbox, "POST", f"{API}/issues", {"title": "t"}).status_code for _ in range(3)]
    assert codes == [503, 503, 201]
    assert sandbox.pending_faults == []
    with pytest.raises(ValueError):
        sandbox.inject_fault("GET", ".*", 200)
    with pytest.raises(ValueError):
        sandbox.inject_fault("GET", ".*", 600)
    with pytest.raises(ValueError):
        sandbox.inject_fault("GET", ".*", "explode")
