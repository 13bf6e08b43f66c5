"""#21.4: the tracking issue is verified before any write. A wrong number is exit 2 with
nothing written. #54: a missing one is the issue with the tracking label, else the one open
issue whose body holds the audit's commit and checklist; none (or several) is exit 2 naming
--tracking-issue and ARTBOT_TRACKING_ISSUE, with nothing filed."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import CANARY, NAME, OWNER, REPO, TRACKING, artbot, issues_for, writes


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


def test_without_a_tracking_issue_configured_the_one_holding_the_audit_is_used(
    art: GitHubSandbox, root: Path
) -> None:
    """#54: `open` without --tracking-issue filed issues without touching the checklist, and
    `sync` changed no body: both now find #1111, the issue whose body holds the audit's commit
    and its list, say so, and link it (the back-link and the checklist line)."""
    art.requests.clear()
    opened = without_tracking(art, root, "open", "--item", "7")
    assert opened.exit_code == 0, opened.output
    assert f"using #{TRACKING}, the issue that holds the audit's commit" in opened.output
    [issue] = issues_for(art, 7)
    body = art.get_issue(OWNER, NAME, issue["number"])["body"]
    assert f"#{TRACKING}" in body  # the back-link
    tracking = art.get_issue(OWNER, NAME, TRACKING)["body"]
    assert f"#{issue['number']}" in tracking  # the checklist links the new issue
    synced = without_tracking(art, root, "sync")
    assert synced.exit_code == 0, synced.output
    assert art.get_issue(OWNER, NAME, issue["number"])["body"] == body


def test_without_a_tracking_issue_found_nothing_is_filed(art: GitHubSandbox, root: Path) -> None:
    """No open issue holds the audit's commit and checklist (the seed renamed and reworded):
    one line naming both ways to configure it, exit 2, no write; two such issues: the same,
    naming both."""
    art.edit_issue(OWNER, NAME, TRACKING, title="Numerics", body="See the audit's report.")
    art.requests.clear()
    for command in (("open", "--item", "7"), ("sync",), ("open", "--item", "7", "--dry-run")):
        result = without_tracking(art, root, *command)
        assert result.exit_code == 2, result.output
        [line] = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
        assert "--tracking-issue" in line and "ARTBOT_TRACKING_ISSUE" in line, line
        assert "nothing was filed" in line
    assert writes(art) == []
    seed = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    title, _, text = seed.partition("\n")
    first = art.seed_issue(OWNER, NAME, title, text)
    second = art.seed_issue(OWNER, NAME, title + " (copy)", text)
    result = without_tracking(art, root, "open", "--item", "7")
    assert result.exit_code == 2, result.output
    assert f"#{first}, #{second}" in result.stderr and "ARTBOT_TRACKING_ISSUE" in result.stderr
    assert writes(art) == []


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
