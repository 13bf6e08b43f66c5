# ruff: noqa: F811  (the fixtures art and root come from test_apply)
"""#21.2: one identity, established once. A token whose GET /user is 403 (a GitHub App's
installation token) no longer makes open and sync fight each other, and github-actions[bot]
is trusted only when artbot runs as it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import read_block
from artbot.tracking.ownership import recorded_logins, with_identity
from tests.shipped import ISSUE_ITEMS
from tests.test_action import checkout, tracking  # noqa: F401
from tests.test_apply import (  # noqa: F401
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
from tests.test_ownership import LABELS, _body

APP = "artbot-app[bot]"


def test_an_app_token_files_each_item_once_and_never_unlinks(
    art: GitHubSandbox, root: Path
) -> None:
    """Done when: with a token whose GET /user is 403, three `open --all` and three syncs
    file each item once and never unlink (before: 11 duplicates filed and closed in 6 runs,
    every sync unlinking artbot's own issues)."""
    art.login = APP  # the sandbox answers GET /user with 403 for a [bot] login
    for command in ("open", "sync", "open", "sync", "open", "sync"):
        args = ("open", "--all") if command == "open" else ("sync",)
        result = artbot(art, root, *args)
        assert result.exit_code == 0, result.output + result.stderr
        assert "left alone" not in result.output
        assert "as a duplicate" not in result.output
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert not [w for w in writes(art) if w.startswith("DELETE") and "/reactions/" not in w]
    assert recorded_logins(checklist(art)) == (APP,)
    numbers = [i["number"] for item in ISSUE_ITEMS for i in issues_for(art, item, state=None)]
    assert all(f"#{n}" in checklist(art) for n in numbers)


def test_the_identity_survives_a_lost_cache_through_the_tracking_issue(
    art: GitHubSandbox, root: Path
) -> None:
    art.login = APP
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    shutil.rmtree(root / ".artbot")  # a fresh runner: no cache
    art.requests.clear()
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output
    assert "left alone" not in result.output
    assert not any(r.path == "/user" for r in art.requests.snapshot())  # established once


def test_github_actions_bot_is_not_trusted_when_artbot_runs_as_an_app(
    art: GitHubSandbox, root: Path
) -> None:
    """Why 3: any workflow's issue copying artbot's region was adopted, linked and edited."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    body = f"Filed by a workflow from user input:\n\n{_body(7)}\n"
    copy = art.seed_issue(OWNER, NAME, "workflow", body, labels=LABELS, user="github-actions[bot]")
    before = art.get_issue(OWNER, NAME, copy)
    for args in (("sync",), ("open", "--item", "7")):
        result = artbot(art, root, *args)
        assert result.exit_code == 0, result.output
        assert f"#{copy} carries artbot's marker but was written by @github-actions[bot]" in (
            result.output
        )
    assert art.get_issue(OWNER, NAME, copy)["body"] == before["body"]
    assert not any(f"/issues/{copy}" in w for w in writes(art))
    assert not any(f"#{copy}" in line for line in checklist(art).splitlines() if "7." in line)


def test_an_identity_that_cannot_be_established_is_exit_1_with_nothing_written(
    art: GitHubSandbox, root: Path
) -> None:
    """A bot's marked issue, a 403 on GET /user, no record and no cache: artbot cannot tell
    whether the issue is its own, so it writes nothing and says what to do."""
    art.login = APP
    art.seed_issue(OWNER, NAME, "t", _body(7), labels=LABELS, user="other-app[bot]")
    art.requests.clear()
    result = artbot(art, root, "open", "--all")
    assert result.exit_code == 1, result.output
    assert "cannot tell whether" in result.output and "--author" in result.output
    assert writes(art) == []
    # a person's copy is certainly not an installation token's: no refusal for that
    result = artbot(art, root, "open", "--all", "--author", "other-app[bot]")
    assert result.exit_code == 0, result.output


def test_identity_line_in_the_block() -> None:
    block = "- [ ] 1. a\n<!-- artbot:identity login=old[bot] -->\n"
    assert recorded_logins(block) == ("old[bot]",)
    assert with_identity(block, ["old[bot]", "new-app[bot]", "old[bot]"]) == (
        "- [ ] 1. a\n<!-- artbot:identity login=old[bot],new-app[bot] -->\n"
    )
    assert with_identity(block, ()) == block
    assert with_identity("x\n", ["not a login!"]) == "x\n"
    assert recorded_logins(read_block("no block")) == ()


def test_a_maintainer_filing_after_the_app_keeps_the_apps_issues_linked(
    art: GitHubSandbox, root: Path
) -> None:
    """The token changes hands: issues each identity filed stay artbot's (the record keeps
    both), none is unlinked, none filed twice."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    art.login = "maintainer"
    for args in (("open", "--item", "5"), ("sync",), ("open", "--all"), ("sync",)):
        result = artbot(art, root, *args)
        assert result.exit_code == 0, result.output
        assert "left alone" not in result.output
    art.login = APP
    assert artbot(art, root, "sync").exit_code == 0
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert recorded_logins(checklist(art)) == (APP, "maintainer")
    assert not [w for w in writes(art) if w.startswith("DELETE") and "/reactions/" not in w]


@pytest.mark.e2e
@pytest.mark.parametrize("token", ["workflow", "personal"])
def test_the_action_trusts_github_actions_bot_only_with_the_workflows_token(
    sandbox: GitHubSandbox, tracking: int, checkout: Path, token: str
) -> None:
    """An issue the action filed before identities were recorded (github-actions[bot], no
    record): with the workflow's own token artbot runs as github-actions[bot] and keeps it;
    with a person's token it is someone else's issue and left alone."""
    from tests.action_harness import direct

    body = _body(4)
    number = sandbox.seed_issue(OWNER, NAME, "t", body, labels=LABELS, user="github-actions[bot]")
    inputs = {"command": "sync", "tracking-issue": str(tracking)}
    if token == "personal":
        sandbox.login = "maintainer"
        inputs["github-token"] = "a-personal-access-token"
    run = direct(inputs, checkout, sandbox)
    assert run.returncode == 0, run.stdout + run.stderr
    left_alone = f"#{number} carries artbot's marker but was written by @github-actions[bot]"
    assert (left_alone in run.stdout + run.stderr) == (token == "personal")
