# ruff: noqa: F811  (the fixtures art and root come from test_apply)
"""#31.5, the smaller items: a run killed after its first create is recovered without
``--author``; invalid logins are exit 2; a 401 or 403 is one line with what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from artbot.tracking.ownership import recorded_logins
from tests.shipped import ISSUE_ITEMS
from tests.test_apply import (  # noqa: F401
    CANARY,
    NAME,
    OWNER,
    TRACKING,
    art,
    artbot,
    checklist,
    issues_for,
    root,
    writes,
)


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


def test_a_token_without_permission_is_one_line_with_a_hint(art: GitHubSandbox, root: Path) -> None:
    message = "Resource not accessible by personal access token"
    art.inject_fault("POST", r"/issues$", 403, message=message)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 1
    assert len(_errors(result.stderr)) == 1, result.stderr
    line = _errors(result.stderr)[0]
    assert f"403: {message}" in line
    assert "issues: write" in line and "repo scope" in line
    assert issues_for(art, 4) == []


def test_pygithub_has_no_handler_of_its_own_left() -> None:
    """PyGithub puts a stderr handler on its logger ("Request POST ... failed with 403"); once
    the adapter is loaded, no stream handler is left and nothing propagates (the process-level
    check is the e2e test below)."""
    import logging

    import artbot.github.client  # noqa: F401

    pygithub = logging.getLogger("github")
    assert not pygithub.propagate
    assert not [h for h in pygithub.handlers if type(h) is logging.StreamHandler], pygithub.handlers


@pytest.mark.e2e
def test_a_403_from_an_artbot_process_is_one_line(art: GitHubSandbox, root: Path) -> None:
    """As a user sees it: the artbot process's stderr holds the error line and nothing else."""
    art.inject_fault("POST", r"/issues$", 403, message="Resource not accessible by integration")
    env = {k: v for k, v in os.environ.items() if k not in ("ARTBOT_AUTHORS", "GITHUB_TOKEN")}
    command = [sys.executable, "-m", "artbot", "--root", str(root), "open", "--item", "4"]
    command += ["--api-url", art.api_url, "--repo", f"{OWNER}/{NAME}"]
    command += ["--tracking-issue", str(TRACKING)]
    done = subprocess.run(
        command, env={**env, "GH_TOKEN": CANARY}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: POST ") and "403: Resource not accessible" in line
    assert "issues: write" in line and CANARY not in done.stderr + done.stdout


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


APP = "artbot-app[bot]"


@pytest.mark.parametrize("limit", [5, 6, 7, 8, 9])
def test_a_run_stopped_right_after_its_first_create_is_recovered_without_author(
    art: GitHubSandbox, root: Path, limit: int
) -> None:
    """An App's token (GET /user refused), the first create on a tracking issue that records
    no identity, the run stopped after ``limit`` writes (4 labels, the reaction and its delete,
    the identity record, the create: 8 is right after it), on a fresh runner (no cache): the
    next run places artbot's issue by the block's record, without --author."""
    art.login = APP
    first = artbot(art, root, "open", "--item", "4", "--max-writes", str(limit))
    assert first.exit_code == 0, first.output
    if limit >= 8:
        assert len(issues_for(art, 4)) == 1
    shutil.rmtree(root / ".artbot", ignore_errors=True)
    for args in (("sync",), ("open", "--all"), ("sync",)):
        result = artbot(art, root, *args)
        assert result.exit_code == 0, result.output + result.stderr
        assert "left alone" not in result.output and "as a duplicate" not in result.output
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert recorded_logins(checklist(art)) == (APP,)
    assert art.reactions_on(OWNER, NAME, TRACKING) == []  # the reaction is gone again
    assert not [w for w in writes(art) if "DELETE" in w and "reactions" not in w]


def test_the_identity_is_recorded_before_the_first_create(art: GitHubSandbox, root: Path) -> None:
    """The order of writes: the identity is in the tracking issue before any issue exists;
    with a person's token (GET /user answers) nothing more is written."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    sent = [w for w in writes(art) if not w.startswith("POST /repos/OpenPipe/ART/labels")]
    assert sent[0].startswith("POST") and sent[0].endswith(f"/issues/{TRACKING}/reactions")
    assert sent[1].startswith("DELETE") and f"/issues/{TRACKING}/reactions/" in sent[1]
    assert sent[2].startswith("PATCH") and sent[2].endswith(f"/issues/{TRACKING}")
    assert sent[3].startswith("POST") and sent[3].endswith("/issues")
    art.requests.clear()
    assert artbot(art, root, "open", "--item", "5").exit_code == 0  # recorded: no reaction
    assert not [w for w in writes(art) if "reactions" in w]


def test_a_person_token_stopped_after_its_first_create_is_recovered(
    art: GitHubSandbox, root: Path
) -> None:
    art.login = "maintainer"
    assert artbot(art, root, "open", "--item", "4", "--max-writes", "8").exit_code == 0
    assert len(issues_for(art, 4)) == 1
    shutil.rmtree(root / ".artbot", ignore_errors=True)
    art.requests.clear()
    result = artbot(art, root, "sync")
    assert result.exit_code == 0 and "left alone" not in result.output, result.output
    assert not any(r.path == "/user" for r in art.requests.snapshot())  # the record says
    assert len(issues_for(art, 4)) == 1
    assert recorded_logins(checklist(art)) == ("maintainer",)
