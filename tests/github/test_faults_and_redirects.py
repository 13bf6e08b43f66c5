"""Hardening (#12), the GitHub half: PyGithub over HTTP against the sandbox, faults injected.

The pure half (markers, validate) is in records/test_markers_and_input.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import NAME, OWNER, TRACKING, artbot, checklist, issues_for
from tests.helpers.testsandbox import TestSandbox


def test_rate_limited_checklist_patch_is_retried(art: TestSandbox, root: Path) -> None:
    """#12 item 3: a 403 secondary rate limit with Retry-After on the PATCH, then a 429
    without one: both retried, the checklist written."""
    art.inject_fault("PATCH", rf"/issues/{TRACKING}$", "secondary_rate_limit", retry_after=0)
    art.inject_fault("PATCH", rf"/issues/{TRACKING}$", 429)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 0, result.output
    assert "#1112" in checklist(art)
    assert not art.pending_faults


def test_connection_reset_after_create_files_once(art: TestSandbox, root: Path) -> None:
    """#12 item 3: a dropped connection after the POST took effect is not re-sent blind."""
    art.inject_fault("POST", r"/issues$", "drop", after_write=True)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 0, result.output
    posts = [r for r in art.requests if r.method == "POST" and r.path.endswith("/issues")]
    assert len(posts) == 1
    assert len(issues_for(art, 4, state=None)) == 1  # no second issue was filed


@pytest.mark.parametrize("url", ["not a url", "ftp://host/api", "http://", "http://h:x/"])
def test_malformed_api_url_is_a_one_line_usage_error(
    art: GitHubSandbox, root: Path, url: str
) -> None:
    """#12 item 5: exit 2, no internal error, nothing sent."""
    from click.testing import CliRunner

    from artbot.cli import cli

    result = CliRunner(env={"GH_TOKEN": "x"}).invoke(
        cli, ["--root", str(root), "sync", "--api-url", url, "--tracking-issue", str(TRACKING)]
    )
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert "--api-url" in result.output
    assert len(art.requests) == 0


@pytest.mark.parametrize("command", [("sync",), ("open", "--item", "4"), ("render", "--item", "4")])
def test_negative_tracking_issue_is_refused_before_any_request(
    art: GitHubSandbox, root: Path, command: tuple[str, ...]
) -> None:
    """#12 item 5: `--tracking-issue -5` is never sent to GitHub."""
    from click.testing import CliRunner

    from artbot.cli import cli

    result = CliRunner(env={"GH_TOKEN": "x"}).invoke(
        cli,
        ["--root", str(root), *command, "--tracking-issue", "-5", "--api-url", art.api_url],
    )
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output
    assert len(art.requests) == 0


def test_warnings_are_redacted_and_their_annotation_escaped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """#12 item 6: a warning carrying the token (e.g. echoed back by a server) is redacted
    on stderr and in its ::warning:: annotation, whose text is escaped (one line)."""
    from artbot.report.output import report
    from artbot.run.commands import Outcome
    from artbot.run.plan import Plan
    from artbot.settings import Settings

    token = "ghp_CANARY0123456789abcdefCANARY"
    settings = Settings(token=token, secrets=(token,), in_actions=True)
    outcome = Outcome(Plan(), warnings=[f"could not label #5: 100% denied for {token}\n::error::x"])
    report(outcome, settings, as_json=False, dry_run=False)
    out, err = capsys.readouterr()
    assert token not in out + err
    warning_lines = [line for line in out.splitlines() if line.startswith("::warning::")]
    assert warning_lines == ["::warning::could not label #5: 100%25 denied for ***%0A::error::x"]
    assert "::error::" not in [line[:9] for line in out.splitlines()]


def test_etag_cache_is_not_trusted_against_another_api_url(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    """#12 item 7: an entry saved against one API root is not sent to another."""
    from artbot.github.client import EtagCache, GitHubRepo

    cache = EtagCache(tmp_path / "cache.json")
    GitHubRepo(f"{OWNER}/{NAME}", api_url=art.api_url, cache=cache).get_issue(TRACKING)
    assert cache.entries
    with GitHubSandbox() as other:
        other.create_repo(OWNER, NAME)
        for number in (1108, 1109, 1110):
            other.seed_issue(OWNER, NAME, f"#{number}", "x", number=number)
        other.seed_issue(OWNER, NAME, "another tracking issue", "other body", number=TRACKING)
        repo = GitHubRepo(f"{OWNER}/{NAME}", api_url=other.api_url, cache=cache)
        assert repo.get_issue(TRACKING).body == "other body"
        assert [r.status for r in other.requests] == [200]
    # one entry per API root for the same path: neither answers for the other
    assert len(cache.entries) == 2
    assert all(key.startswith((art.api_url + " ", other.api_url + " ")) for key in cache.entries)


@pytest.mark.parametrize("status", [302, 307, 308])
def test_a_temporary_redirect_within_the_api_is_followed_verbatim(
    art: TestSandbox, root: Path, status: int
) -> None:
    """#12 item 5: GitHub asks for 302/307 to be repeated verbatim at Location."""
    art.inject_fault("PATCH", rf"/issues/{TRACKING}$", status)
    art.inject_fault("GET", r"/issues$", status)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 0, result.output + result.stderr
    assert "#1112" in checklist(art)
    patches = [r.status for r in art.requests if r.method == "PATCH"]
    assert patches == [status, 200]  # the checklist: redirected, then repeated at Location


def test_a_moved_repository_is_followed_within_the_api(art: TestSandbox, root: Path) -> None:
    target = f"{art.api_url}/repos/{OWNER}/{NAME}/issues?state=all"
    art.inject_fault("GET", rf"/repos/{OWNER}/{NAME}/issues$", 301, location=target)
    result = artbot(art, root, "sync", "--dry-run")
    assert result.exit_code == 0, result.output + result.stderr


@pytest.mark.parametrize(
    "location", ["http://elsewhere.example/repos/x/y/issues", "https://127.0.0.1/repos/x"]
)
def test_a_redirect_off_the_api_is_one_line_and_not_followed(
    art: TestSandbox, root: Path, location: str
) -> None:
    art.inject_fault("GET", r"/issues$", 307, location=location)
    result = artbot(art, root, "open", "--item", "4")
    assert result.exit_code == 1, result.output
    text = result.output + result.stderr
    assert "not followed" in text and "internal error" not in text
    assert issues_for(art, 4) == []


def test_a_redirect_loop_stops_after_three(art: TestSandbox, root: Path) -> None:
    art.inject_fault("GET", r"/issues$", 307, times=10)
    result = artbot(art, root, "sync", "--dry-run")
    assert result.exit_code == 1, result.output
    assert "more than 3 redirects" in result.output + result.stderr
    assert len([r for r in art.requests if r.path.endswith("/issues")]) == 4


def test_three_syncs_keep_an_issue_whose_human_text_quotes_both_markers_the_same_length(
    art: GitHubSandbox, root: Path
) -> None:
    """#12 Done when: over HTTP, through the CLI."""
    from artbot.records.marker import BODY_END, BODY_START

    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    [issue] = issues_for(art, 4)
    note = f"Maintainer: artbot owns `{BODY_START}` to\n{BODY_END}\n> {BODY_START}\n\n"
    art.edit_issue(OWNER, NAME, issue["number"], body=note + issue["body"])
    lengths = []
    for _ in range(3):
        result = artbot(art, root, "sync")
        assert result.exit_code == 0, result.output + result.stderr
        lengths.append(len(art.get_issue(OWNER, NAME, issue["number"])["body"]))
    assert lengths == [len(note + issue["body"])] * 3
    assert art.get_issue(OWNER, NAME, issue["number"])["body"].startswith(note)
