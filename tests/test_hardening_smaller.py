# ruff: noqa: F811  (the fixtures art and root come from test_apply)
"""#31.5, the smaller items: a run killed after its first create is recovered without
``--author``; invalid logins are exit 2; a 401 or 403 is one line with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from tests.test_apply import art, artbot, issues_for, root, writes  # noqa: F401


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if "GitHub answered" in line]


def test_bad_credentials_are_one_line_with_a_hint(art: GitHubSandbox, root: Path) -> None:
    art._tokens = ["another token"]  # the sandbox answers 401 Bad credentials
    result = artbot(art, root, "sync")
    assert result.exit_code == 1
    assert len(_errors(result.stderr)) == 1, result.stderr
    line = _errors(result.stderr)[0]
    assert "401: Bad credentials" in line and "the token is invalid or expired" in line
    assert "Request " not in result.stderr and "Traceback" not in result.stderr


def test_a_token_without_permission_is_one_line_with_a_hint(
    art: GitHubSandbox, root: Path
) -> None:
    message = "Resource not accessible by personal access token"
    art.inject_fault("POST", r"/issues$", 403, message=message)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 1
    assert len(_errors(result.stderr)) == 1, result.stderr
    line = _errors(result.stderr)[0]
    assert f"403: {message}" in line
    assert "issues: write" in line and "repo scope" in line
    assert issues_for(art, 4) == []


def test_a_rate_limit_403_is_still_waited_out(art: GitHubSandbox, root: Path) -> None:
    art.inject_fault("POST", r"/issues$", "secondary_rate_limit", retry_after=0)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 0, result.output
    assert len(issues_for(art, 4)) == 1
    assert "issues: write" not in result.output


BAD_LOGINS = ["has space", "-leading", "x" * 40, "", "a,b", "name[bot", "emoji🙂"]


@pytest.mark.parametrize("login", BAD_LOGINS)
def test_an_invalid_author_is_exit_2_naming_the_option(
    art: GitHubSandbox, root: Path, login: str
) -> None:
    for command in (("sync",), ("open", "--item", "4")):
        result = artbot(art, root, *command, "--author", login)
        assert result.exit_code == 2, result.output
        errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
        assert len(errors) == 1 and "--author" in errors[0], result.stderr
        assert repr(login[:60]) in errors[0]
    assert art.requests.snapshot() == []


@pytest.mark.parametrize("value", ["good -bad", "ok,also-ok", "x" * 40])
def test_an_invalid_artbot_authors_is_exit_2_naming_the_variable(
    art: GitHubSandbox, root: Path, value: str
) -> None:
    result = artbot(art, root, "sync", env={"ARTBOT_AUTHORS": value})
    assert result.exit_code == 2, result.output
    assert "$ARTBOT_AUTHORS" in result.stderr and "not a GitHub login" in result.stderr
    assert art.requests.snapshot() == []


def test_valid_authors_are_accepted(art: GitHubSandbox, root: Path) -> None:
    value = f"maintainer some-app[bot] {'x' * 39} A1-b"
    result = artbot(art, root, "sync", env={"ARTBOT_AUTHORS": value})
    assert result.exit_code == 0, result.output
    result = artbot(art, root, "sync", "--author", "github-actions[bot]")
    assert result.exit_code == 0, result.output
