"""ART's repository in the sandbox as the audit left it, and artbot run against it: the names,
the CLI call, and what the tests read back (issues by item, the checklist, the writes sent).
The fixtures ``root`` (a checkout) and ``art`` (the seeded repository) are in tests/conftest.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from artbot.cli import cli
from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.records.marker import IssueMarker
from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import read_block
from tests.helpers.golden import render_issue

REPO = Path(__file__).resolve().parents[2]
OWNER, NAME = "OpenPipe", "ART"
CANARY = "ghp_CANARY0123456789abcdefCANARY"
TRACKING = 1111


def checkout_catalog(out: Path) -> Path:
    """A checkout of the catalog at ``out``, so caches and results stay out of the repository
    (without the controls and bytecode, which no run reads: a fifth of the copying)."""
    skip = shutil.ignore_patterns("results", "status", "controls", "__pycache__")
    for part in ("findings", "templates", "repros"):
        shutil.copytree(REPO / part, out / part, ignore=skip)
    return out


def seed_audit(sandbox: GitHubSandbox) -> None:
    """ART as the audit left it: #1108-#1110 filed by hand, then the tracking issue #1111."""
    sandbox.create_repo(OWNER, NAME)
    for number in (1108, 1109, 1110):
        sandbox.seed_issue(OWNER, NAME, f"dedicated issue {number}", "by hand", number=number)
    text = (REPO / "findings" / "tracking-issue.md").read_text(encoding="utf-8")
    title, _, body = text.partition("\n")
    assert sandbox.seed_issue(OWNER, NAME, title, body.lstrip(), number=TRACKING) == TRACKING
    sandbox.requests.clear()


def artbot(
    sandbox: GitHubSandbox,
    root: Path,
    *args: str,
    token: str = CANARY,
    env: dict[str, str | None] | None = None,
) -> Result:
    env = {
        "GH_TOKEN": token,
        "GITHUB_TOKEN": None,
        "GITHUB_ACTIONS": None,
        "GITHUB_REPOSITORY": None,
        "ARTBOT_SECONDARY_RATE_WAIT": "1",
        "ARTBOT_AUTHORS": None,
        **(env or {}),
    }
    return CliRunner(env=env).invoke(
        cli,
        [
            "--root",
            str(root),
            *args,
            "--api-url",
            sandbox.api_url,
            "--repo",
            f"{OWNER}/{NAME}",
            *(() if "--tracking-issue" in args else ("--tracking-issue", str(TRACKING))),
        ],
    )


def issues_for(sandbox: GitHubSandbox, item: int, state: str | None = "open") -> list[dict]:
    found: list[dict] = []
    number = 1
    while True:
        try:
            issue = sandbox.get_issue(OWNER, NAME, number)
        except Exception:
            if number > TRACKING:
                return found
            number += 1
            continue
        marker = IssueMarker.find(issue.get("body"))
        if marker and marker.item == item and (state is None or issue["state"] == state):
            found.append(issue)
        number += 1


def checklist(sandbox: GitHubSandbox) -> str:
    return read_block(sandbox.get_issue(OWNER, NAME, TRACKING)["body"]) or ""


def item_line(block: str, item: int) -> str:
    """The checklist line of ``item`` (``- [ ] 7. <title> — #N``)."""
    [line] = [ln for ln in block.splitlines() if ln.startswith("- [") and f"] {item}. " in ln]
    return line


def writes(sandbox: GitHubSandbox) -> list[str]:
    return [f"{r.method} {r.path}" for r in sandbox.requests.snapshot() if r.method != "GET"]


def repo_client(sandbox: GitHubSandbox) -> GitHubRepo:
    return GitHubRepo(f"{OWNER}/{NAME}", api_url=sandbox.api_url, token=CANARY, cache=EtagCache())


# -- requests by checkbox: the tracking issue's Requests, ticked by an `issues: edited` event --


def request_line(block: str, key: str) -> str:
    [line] = [ln for ln in block.splitlines() if ln.endswith(f"<!-- artbot:request {key} -->")]
    return line


def prepared(art: GitHubSandbox, root: Path) -> None:
    """One sync, so the tracking issue carries the checklist with its Requests."""
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output + result.stderr
    assert request_line(checklist(art), "file=5").startswith("- [ ] File the issue for item 5")


def event_file(tmp: Path, sender: str, before: str, after: str | None = None) -> Path:
    """The payload of an ``issues: edited`` event, as GitHub sends it (the parts artbot reads):
    the edit's sender, the issue with its new body, and the body before the edit."""
    payload = {
        "action": "edited",
        "issue": {"number": TRACKING, "body": after},
        "sender": {"login": sender},
        "changes": {"body": {"from": before}},
    }
    path = tmp / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


# -- a findings issue as artbot files it ----------------------------------------------------

LABELS = tuple(load_catalog(REPO).audit.labels)


def filed_body(item: int) -> str:
    catalog = load_catalog(REPO)
    return render_issue(catalog, catalog.get(item), tracking_issue=TRACKING).body
