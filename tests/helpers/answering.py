"""`/artbot test` as the patch-testing tests drive it: a trial on the release, artbot's issue
in the sandbox, the responder run as the CLI runs it, and the answers read back
(tests/patchtest/)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from click.testing import CliRunner, Result

from artbot.cli import cli
from artbot.patchtest.command import Refusal, checked_diff
from artbot.patchtest.trial import Trial, run_trial
from artbot.records.catalog import load_catalog
from artbot.records.marker import BODY_END, BODY_START, IssueMarker
from artbot.sandbox import GitHubSandbox
from tests.helpers.patchdiff import RELEASE
from tests.helpers.sandbox_client import NAME, OWNER, TOKEN, client
from tests.helpers.wheels import default_wheels

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "patchtest"
ARTBOT = "github-actions[bot]"  # the sandbox's login: what every token writes as
WRITER, READER = "maintainer", "passerby"
NO_TOKEN = {k: v for k, v in os.environ.items() if "TOKEN" not in k.upper()}


def live(markdown: str) -> str:
    """``markdown`` without its code spans: the text GitHub renders live (#53)."""
    return re.sub(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", "", markdown)


def trial(item: int, diff: str, env: dict[str, str] | None = None) -> Trial:
    """``diff`` tried on item ``item`` of the release (skipped when its wheel cannot be had)."""
    catalog = load_catalog(REPO)
    default_wheels().wheel(RELEASE)  # skipped (failed under CI) when it cannot be had
    parsed = checked_diff(diff, RELEASE)
    assert not isinstance(parsed, Refusal), parsed
    out = run_trial(
        catalog, item, parsed.files, RELEASE, source="a test's diff", env=env or NO_TOKEN
    )
    assert not isinstance(out, Refusal), out
    return out


def filed(sandbox: GitHubSandbox, item: int) -> int:
    """An issue artbot filed for ``item`` (its marker, its labels, its author)."""
    audit = load_catalog(REPO).audit
    body = f"{BODY_START}\n{IssueMarker(audit.commit, item)}\n{BODY_END}\n"
    return sandbox.seed_issue(
        OWNER, NAME, f"item {item}", body, labels=list(audit.labels), user=ARTBOT
    )


def answer(sandbox: GitHubSandbox, *args: str) -> Result:
    """``artbot answer-tests ARGS`` against the sandbox, with the token."""
    env = {"GH_TOKEN": TOKEN, "GITHUB_TOKEN": None, "GITHUB_REPOSITORY": None}
    base = ["--root", str(REPO), "answer-tests", "--api-url", sandbox.api_url]
    return CliRunner(env=env).invoke(cli, [*base, "--repo", f"{OWNER}/{NAME}", *args])


def answers(sandbox: GitHubSandbox, number: int) -> list[str]:
    """artbot's answers on #number, read with PyGithub."""
    gh = client(sandbox)
    try:
        comments = gh.get_repo(f"{OWNER}/{NAME}").get_issue(number).get_comments()
        return [c.body for c in comments if c.user.login == ARTBOT and "**artbot test**" in c.body]
    finally:
        gh.close()
