"""#21.4: the tracking issue is verified before any write. A wrong number is exit 2 with
nothing written; a missing one is the issue with the tracking label, or no body changes."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import CANARY, NAME, OWNER, TRACKING, artbot, issues_for, writes


def without_tracking(sandbox: GitHubSandbox, root: Path, *args: str) -> Result:
    from artbot.cli import cli

    env = {"GH_TOKEN": CANARY, "GITHUB_TOKEN": None, "GITHUB_ACTIONS": None}
    return CliRunner(env=env).invoke(
        cli,
        ["--root", str(root), *args, "--api-url", sandbox.api_url, "--repo", f"{OWNER}/{NAME}"],
    )


def test_sync_with_a_findings_issue_as_tracking_issue_is_exit_2_and_writes_nothing(
    art: GitHubSandbox, root: Path
) -> None:
    """Done when / Why 6: `sync --tracking-issue 1` where #1 was item 7's issue wrote the
    checklist into it and labelled it audit:tracking, disowning it for good."""
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    [issue] = issues_for(art, 7)
    before = art.get_issue(OWNER, NAME, issue["number"])
    art.requests.clear()
    for command in (("sync",), ("open", "--item", "4")):
        result = artbot(art, root, *command, "--tracking-issue", str(issue["number"]))
        assert result.exit_code == 2, result.output
        assert f"#{issue['number']} is item 7's issue, not the tracking issue" in result.output
        assert "nothing was written" in result.output
    assert writes(art) == []
    after = art.get_issue(OWNER, NAME, issue["number"])
    assert (after["body"], after["labels"]) == (before["body"], before["labels"])


def test_an_unrelated_issue_as_tracking_issue_is_exit_2(art: GitHubSandbox, root: Path) -> None:
    other = art.seed_issue(OWNER, NAME, "Flaky CI on main", "Happens on every other run.")
    art.requests.clear()
    result = artbot(art, root, "sync", "--tracking-issue", str(other))
    assert result.exit_code == 2, result.output
    assert f"#{other} is not the audit's tracking issue" in result.output
    assert writes(art) == []


def test_sync_without_tracking_issue_finds_it_by_its_label(art: GitHubSandbox, root: Path) -> None:
    assert artbot(art, root, "sync").exit_code == 0  # labels #1111 audit:tracking
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    [issue] = issues_for(art, 7)
    body = art.get_issue(OWNER, NAME, issue["number"])["body"]
    assert f"#{TRACKING}" in body
    result = without_tracking(art, root, "sync")
    assert result.exit_code == 0, result.output
    assert art.get_issue(OWNER, NAME, issue["number"])["body"] == body  # back-link kept


def test_sync_without_any_tracking_issue_changes_no_body(art: GitHubSandbox, root: Path) -> None:
    """Why 6: sync without --tracking-issue stripped "tracked in #N" from every body."""
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    [issue] = issues_for(art, 7)
    body = art.get_issue(OWNER, NAME, issue["number"])["body"]
    art.requests.clear()
    result = without_tracking(art, root, "sync")
    assert result.exit_code == 0, result.output
    assert "no issue body was changed" in result.output
    assert art.get_issue(OWNER, NAME, issue["number"])["body"] == body
    assert not any(f"/issues/{issue['number']}" in w for w in writes(art))


def test_a_wrong_tracking_issue_is_exit_2_before_any_identity_question(
    art: GitHubSandbox, root: Path
) -> None:
    """#32.2: once artbot has filed issues, with another token (an App's),
    `--tracking-issue 9999` (or 1108, a finding's issue) is one line and exit 2, dry run or
    not, before any question of identity and with no PyGithub line."""
    assert artbot(art, root, "open", "--item", "5", "--item", "7").exit_code == 0
    art.login = "artbot-app[bot]"
    (root / ".artbot" / "cache.json").unlink()  # a fresh runner
    art.requests.clear()
    for number, says in ((9999, "tracking issue #9999 does not exist"), (1108, "#1108 is not")):
        for extra in ((), ("--dry-run",)):
            for command in (("sync",), ("open", "--item", "4")):
                result = artbot(art, root, *command, *extra, "--tracking-issue", str(number))
                assert result.exit_code == 2, result.output + result.stderr
                errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
                assert len(errors) == 1 and says in errors[0], result.stderr
                assert "--author" not in result.stderr and "Request GET" not in result.stderr
    assert writes(art) == []
    assert not [r for r in art.requests.snapshot() if r.path.endswith("/user")]
