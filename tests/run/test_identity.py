"""#21.2, #39.2: one identity, configured. An App's installation token, configured with
``--author``, never makes open and sync fight each other; github-actions[bot] is trusted only
when artbot runs as it; the tracking issue's record keeps the logins configured before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from artbot.tracking.record import read_record
from tests.helpers.artrepo import (
    LABELS,
    NAME,
    OWNER,
    artbot,
    checklist,
    filed_body,
    issues_for,
    writes,
)
from tests.helpers.shipped import ISSUE_ITEMS

APP = "artbot-app[bot]"
AS_APP = ("--author", APP)


def recorded_logins(block: str) -> tuple[str, ...]:
    return read_record(block).logins


def test_an_app_token_files_each_item_once_and_never_unlinks(
    art: GitHubSandbox, root: Path
) -> None:
    """Done when: with an App's token, three `open --all` and three syncs file each item
    once and never unlink (before: 11 duplicates filed and closed in 6 runs, every sync
    unlinking artbot's own issues)."""
    art.login = APP
    for command in ("open", "sync", "open", "sync", "open", "sync"):
        args = ("open", "--all") if command == "open" else ("sync",)
        result = artbot(art, root, *args, *AS_APP)
        assert result.exit_code == 0, result.output + result.stderr
        assert "left alone" not in result.output
        assert "as a duplicate" not in result.output
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert not [w for w in writes(art) if w.startswith("DELETE")]
    assert recorded_logins(checklist(art)) == (APP,)
    numbers = [i["number"] for item in ISSUE_ITEMS for i in issues_for(art, item, state=None)]
    assert all(f"#{n}" in checklist(art) for n in numbers)


def test_the_identity_survives_a_lost_cache_and_is_never_asked(
    art: GitHubSandbox, root: Path
) -> None:
    art.login = APP
    assert artbot(art, root, "open", "--item", "4", *AS_APP).exit_code == 0
    shutil.rmtree(root / ".artbot")  # a fresh runner: no cache
    result = artbot(art, root, "sync", *AS_APP)
    assert result.exit_code == 0, result.output
    assert "left alone" not in result.output
    assert not any(r.path == "/user" for r in art.requests.snapshot())  # configured


def test_github_actions_bot_is_not_trusted_when_artbot_runs_as_an_app(
    art: GitHubSandbox, root: Path
) -> None:
    """Why 3: any workflow's issue copying artbot's region was adopted, linked and edited."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4", *AS_APP).exit_code == 0
    body = f"Filed by a workflow from user input:\n\n{filed_body(7)}\n"
    copy = art.seed_issue(OWNER, NAME, "workflow", body, labels=LABELS, user="github-actions[bot]")
    before = art.get_issue(OWNER, NAME, copy)
    for args in (("sync",), ("open", "--item", "7")):
        result = artbot(art, root, *args, *AS_APP)
        assert result.exit_code == 0, result.output
        assert f"#{copy} carries artbot's marker but was written by @github-actions[bot]" in (
            result.output
        )
    assert art.get_issue(OWNER, NAME, copy)["body"] == before["body"]
    assert not any(f"/issues/{copy}" in w for w in writes(art))
    assert not any(f"#{copy}" in line for line in checklist(art).splitlines() if "7." in line)


def test_a_maintainer_filing_after_the_app_keeps_the_apps_issues_linked(
    art: GitHubSandbox, root: Path
) -> None:
    """The token changes hands: issues each identity filed stay artbot's (the record keeps
    both), none is unlinked, none filed twice."""
    art.login = APP
    assert artbot(art, root, "open", "--item", "4", *AS_APP).exit_code == 0
    art.login = "maintainer"
    for args in (("open", "--item", "5"), ("sync",), ("open", "--all"), ("sync",)):
        result = artbot(art, root, *args, "--author", "maintainer")
        assert result.exit_code == 0, result.output
        assert "left alone" not in result.output
    art.login = APP
    assert artbot(art, root, "sync", *AS_APP).exit_code == 0
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item, state=None)) == 1, item
    assert recorded_logins(checklist(art)) == (APP, "maintainer")
    assert not [w for w in writes(art) if w.startswith("DELETE")]


@pytest.mark.e2e
@pytest.mark.parametrize("token", ["workflow", "personal"])
def test_the_action_trusts_github_actions_bot_only_with_the_workflows_token(
    sandbox: GitHubSandbox, tracking: int, checkout: Path, token: str
) -> None:
    """An issue the action filed before logins were recorded (github-actions[bot], no
    record): with the workflow's own token artbot runs as github-actions[bot] and keeps it;
    with a person's token (configured as that person) it is someone else's and left alone."""
    from tests.helpers.action_harness import direct

    body = filed_body(4)
    number = sandbox.seed_issue(OWNER, NAME, "t", body, labels=LABELS, user="github-actions[bot]")
    inputs = {"command": "sync", "tracking-issue": str(tracking)}
    if token == "personal":
        sandbox.login = "maintainer"
        inputs["github-token"] = "a-personal-access-token"
    env = {"ARTBOT_AUTHORS": "maintainer"} if token == "personal" else None
    run = direct(inputs, checkout, sandbox, extra_env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    left_alone = f"#{number} carries artbot's marker but was written by @github-actions[bot]"
    assert (left_alone in run.stdout + run.stderr) == (token == "personal")
