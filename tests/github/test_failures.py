"""#31.5, the smaller items: a run killed after its first create is recovered by the
configured login; invalid logins are exit 2; a 401 or 403 is one line with what to do."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from artbot.tracking.record import read_record
from tests.helpers.artrepo import (
    CANARY,
    NAME,
    OWNER,
    TRACKING,
    artbot,
    checklist,
    issues_for,
    writes,
)
from tests.helpers.shipped import ISSUE_ITEMS
from tests.helpers.testsandbox import TestSandbox


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


def test_a_token_without_permission_is_one_line_with_a_hint(art: TestSandbox, root: Path) -> None:
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
def test_a_403_from_an_artbot_process_is_one_line(art: TestSandbox, root: Path) -> None:
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


def test_a_rate_limit_403_is_still_waited_out(art: TestSandbox, root: Path) -> None:
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


@pytest.mark.parametrize("limit", [4, 5, 6, 7])
def test_a_run_stopped_right_after_its_first_create_is_recovered(
    art: GitHubSandbox, root: Path, limit: int
) -> None:
    """An App's token, configured (``--author``), the first create on a tracking issue that
    records nothing yet, the run stopped after ``limit`` writes (4 labels, the create: 5 is
    right after it), on a fresh runner (no cache): the next run places artbot's issue by the
    configured login, and nothing is ever learnt by a write (no reaction, no GET /user)."""
    art.login = APP
    me = ("--author", APP)
    first = artbot(art, root, "open", "--item", "4", "--max-writes", str(limit), *me)
    assert first.exit_code == 0, first.output
    if limit >= 5:
        assert len(issues_for(art, 4)) == 1
    shutil.rmtree(root / ".artbot", ignore_errors=True)
    for args in (("sync",), ("open", "--all"), ("sync",)):
        result = artbot(art, root, *args, *me)
        assert result.exit_code == 0, result.output + result.stderr
        assert "left alone" not in result.output and "as a duplicate" not in result.output
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert read_record(checklist(art)).logins == (APP,)
    assert not [w for w in writes(art) if "DELETE" in w or "reactions" in w]
    assert not any(r.path == "/user" for r in art.requests.snapshot())


def test_nothing_but_labels_is_written_before_the_first_create(
    art: GitHubSandbox, root: Path
) -> None:
    """The login is configured, so no write learns or records it first: the labels, the
    create, then the one block write, which records the configured login."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4", "--author", APP).exit_code == 0
    sent = [w for w in writes(art) if not w.startswith("POST /repos/OpenPipe/ART/labels")]
    assert sent[0].startswith("POST") and sent[0].endswith("/issues")
    assert sent[-1].startswith("PATCH") and sent[-1].endswith(f"/issues/{TRACKING}")
    assert sum(w.endswith(f"/issues/{TRACKING}") for w in sent) == 1
    assert read_record(checklist(art)).logins == (APP,)
