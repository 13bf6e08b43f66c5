"""The check that keeps the sandbox GitHub as a schema-checked client sees it
(tests/helpers/github_schema.py, run by tests/conftest.py on every response of the suite): it finds
what it must, every endpoint the sandbox serves is one GitHub publishes, and the endpoints
GitHub's schema is strictest about answer as it requires. Also: every request artbot sends
carries the API version and GitHub's media type, as the sandbox sees them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from artbot.cli import cli
from artbot.cli.demo import seed
from artbot.github.client import API_HEADERS, GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox, SentResponse
from tests.helpers.github_schema import endpoint, problems, shape
from tests.helpers.sandbox_client import API, NAME, OWNER, REPO, raw
from tests.helpers.testsandbox import TestSandbox

ROOT = Path(__file__).resolve().parents[2]
PERMISSION = "/repos/{owner}/{repo}/collaborators/{username}/permission"


def sent(route: str | None, body: Any, status: int = 200, method: str = "GET") -> SentResponse:
    return SentResponse(method, route or "/nowhere", route, status, json.dumps(body))


@pytest.fixture
def recorded(sandbox: GitHubSandbox) -> Iterator[list[SentResponse]]:
    seen: list[SentResponse] = []
    GitHubSandbox.observers.append(seen.append)
    yield seen
    GitHubSandbox.observers.remove(seen.append)


def test_a_missing_required_field_is_found(sandbox: GitHubSandbox) -> None:
    sandbox.create_repo(OWNER, NAME)
    answer = raw(sandbox, "GET", f"{API}/collaborators/someone/permission").json()
    assert problems(sent(PERMISSION, answer)) == []
    del answer["user"]["role_name"]
    found = problems(sent(PERMISSION, answer))
    assert len(found) == 1 and "$.user.role_name: Field required" in found[0], found


def test_a_wrong_type_an_unknown_key_and_an_unpublished_endpoint_are_found(
    sandbox: GitHubSandbox,
) -> None:
    sandbox.create_repo(OWNER, NAME)
    sandbox.seed_issue(OWNER, NAME, "t", "b", labels=["a"])
    route = "/repos/{owner}/{repo}/issues/{number}/labels"
    labels = raw(sandbox, "GET", f"{API}/issues/1/labels").json()
    assert problems(sent(route, labels)) == []
    wrong = [{**labels[0], "id": "one"}]
    assert "list[Label]" not in problems(sent(route, wrong))[0]  # checked item by item
    assert "Label at $[0].id: Input should be a valid integer" in problems(sent(route, wrong))[0]
    assert problems(sent(route, [{**labels[0], "colour": "red"}])) == [
        f"GET {route} -> 200: Label has no key $[0].colour"
    ]
    assert problems(sent("/repos/{owner}/{repo}/nothing", {})) == [
        "GET /repos/{owner}/{repo}/nothing is not in GitHub's published API"
    ]
    # GitHub sends "status" in every error body; anything else unknown there is a difference.
    error = {"message": "Not Found", "documentation_url": "x", "status": "404"}
    assert problems(sent(route, error, 404)) == []
    assert problems(sent(route, {**error, "hint": "x"}, 404))[0].endswith("has no key $.hint")
    assert problems(sent(None, error, 404)) == []  # no endpoint: GitHub's BasicError
    assert problems(sent(route, "", 304)) == [
        "GET " + route + " -> 304: a body, where GitHub sends none"
    ]


@pytest.mark.parametrize("sub_issues", [True, False])
def test_every_endpoint_the_sandbox_serves_is_published(sub_issues: bool) -> None:
    """artbot's sandbox and the tests' endpoints over it (tests/helpers/testsandbox.py)."""
    with TestSandbox(sub_issues=sub_issues) as box:
        routes = box._routes
    assert len(routes) >= 20
    missing = [f"{r.method} {r.template}" for r in routes if endpoint(r.method, r.template) is None]
    assert missing == []
    # The path parameters may be named otherwise; their places are GitHub's.
    found = endpoint("GET", "/repos/{owner}/{repo}/issues/{number}/labels")
    assert found is not None and found.path.endswith("{issue_number}/labels")
    assert shape(found.path) == "/repos/{}/{}/issues/{}/labels"


def test_permission_and_issue_labels_answer_as_the_schema_requires(sandbox: TestSandbox) -> None:
    sandbox.create_repo(OWNER, NAME)
    sandbox.set_permission(OWNER, NAME, "triager", "triage")
    answer = raw(sandbox, "GET", f"{API}/collaborators/triager/permission").json()
    assert (answer["permission"], answer["role_name"]) == ("read", "triage")
    assert answer["user"]["role_name"] == "triage"
    assert answer["user"]["permissions"] == {
        "pull": True, "triage": True, "push": False, "maintain": False, "admin": False
    }  # fmt: skip
    owner = raw(sandbox, "GET", f"{API}/collaborators/{OWNER}/permission").json()
    assert owner["user"]["permissions"]["admin"] and owner["user"]["role_name"] == "admin"

    sandbox.seed_issue(OWNER, NAME, "t", "b", labels=["numerics audit", "Bug"])
    names = [lb["name"] for lb in raw(sandbox, "GET", f"{API}/issues/1/labels").json()]
    assert names == ["Bug", "numerics audit"]
    assert raw(sandbox, "GET", f"{API}/issues/9/labels").status_code == 404
    sandbox.delete_issue(OWNER, NAME, 1)
    assert raw(sandbox, "GET", f"{API}/issues/1/labels").status_code == 410


def test_every_request_artbot_sends_carries_the_api_version(
    sandbox: GitHubSandbox, recorded: list[SentResponse]
) -> None:
    tracking = seed(sandbox, load_catalog(ROOT))
    token = "ghp_sandboxToken0123456789"
    runner = CliRunner(env={"GH_TOKEN": token, "GITHUB_REPOSITORY": None})
    args = ["--root", str(ROOT), "open", "--item", "5", "--api-url", sandbox.api_url]
    result = runner.invoke(cli, [*args, "--tracking-issue", str(tracking)])
    assert result.exit_code == 0, result.output
    repo = GitHubRepo(REPO, api_url=sandbox.api_url, token=token)
    assert repo.permission("someone") == "read"
    assert len(recorded) >= 7  # the open (reads and writes), then the permission question
    for response in recorded:
        headers = response.request_headers
        assert {k: headers.get(k) for k in API_HEADERS} == API_HEADERS, response
        assert headers["User-Agent"].startswith("artbot/")
