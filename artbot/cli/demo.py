"""The main job, end to end, on the embedded GitHub sandbox: no token, and GitHub is not contacted.

Seeds a sandbox repository like ART's, then runs ``open`` and ``sync`` through the same code
paths as against GitHub, ticks a request as a maintainer would and syncs on that edit's event,
and shows what a maintainer would see (the README's ``make demo``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..github.client import EtagCache, GitHubRepo
from ..records.catalog import Catalog
from ..run.commands import open_issues, sync
from ..sandbox import GitHubSandbox
from ..sandbox.state import ApiError
from ..status import load_status
from ..tracking.checklist import read_block
from ..tracking.requests import EditEvent

# Only the sandbox accepts this; it stands in for a token so writes are authenticated.
SANDBOX_TOKEN = "sandbox-demo-token"
SEED_FILE = "findings/tracking-issue.md"


@dataclass(frozen=True)
class DemoIssue:
    item: int
    number: int
    title: str
    state: str
    state_reason: str | None
    body: str
    status_recorded: bool


@dataclass(frozen=True)
class DemoResult:
    tracking_issue: int
    issues: tuple[DemoIssue, ...]
    checklist: str
    requests: dict[str, int]
    sub_issues: tuple[tuple[int, str, str], ...] = ()  # (number, state, title), in order
    progress: dict[str, int] | None = None  # the tracking issue's sub_issues_summary


def seed(sandbox: GitHubSandbox, catalog: Catalog) -> int:
    """Create the audited repository with its dedicated issues and tracking issue."""
    owner, name = catalog.audit.repository.split("/")
    sandbox.create_repo(owner, name)
    for f in catalog.findings:
        if f.issue:
            sandbox.seed_issue(
                owner, name, f.title, f"(dedicated issue for audit item {f.item})", number=f.issue
            )
    text = (catalog.root / SEED_FILE).read_text(encoding="utf-8")
    title, _, body = text.partition("\n")
    last = max((f.issue or 0) for f in catalog.findings)
    return sandbox.seed_issue(owner, name, title.strip(), body.lstrip("\n"), number=last + 1)


def seeded_already(sandbox: GitHubSandbox, catalog: Catalog) -> int | None:
    """The tracking issue's number when a persisted sandbox (``--state``) holds it already."""
    owner, name = catalog.audit.repository.split("/")
    last = max((f.issue or 0) for f in catalog.findings)
    try:
        sandbox.get_issue(owner, name, last + 1)
    except (ApiError, KeyError):  # no such issue (404), or no repository yet: not seeded
        return None
    return last + 1


def paste_lines(api_url: str, tracking: int, program: str = "artbot", seeded: bool = True) -> str:
    """What ``artbot sandbox --seed`` prints: the three lines to paste into another shell, and
    what to try there, with ``program`` the command that runs artbot (``.venv/bin/artbot``);
    ``seeded``: this start seeded the sandbox (else its state held the issues already)."""
    done = (
        "Seeded #1108-#1110 and the tracking issue."
        if seeded
        else f"Nothing seeded: the sandbox's state holds the tracking issue #{tracking} already."
    )
    return "\n".join(
        [
            f"{done} In another shell, paste:",
            "",
            f"export GITHUB_API_URL={api_url}",
            f"export GH_TOKEN={SANDBOX_TOKEN}  # any value: the sandbox takes every token",
            f"export ARTBOT_TRACKING_ISSUE={tracking}",
            "",
            f"then try: {program} open --item 5 --dry-run; {program} open --item 5; {program} sync",
        ]
    )


DEMO_ITEMS = (7, 9, 801)  # 801: artbot's own follow-up to item 8, filed and listed apart
TICKED_ITEM = 5  # the request the demo ticks, as a maintainer would


def tick_request(
    sandbox: GitHubSandbox, catalog: Catalog, tracking: int, key: str, sender: str | None = None
) -> EditEvent:
    """Tick the request ``key`` (``file=5``, ``recheck``) in the tracking issue, as ``sender``
    (default: the repository's owner, an admin) editing the issue on the web would; returns the
    ``issues: edited`` event GitHub sends for that edit."""
    owner, name = catalog.audit.repository.split("/")
    body = sandbox.get_issue(owner, name, tracking)["body"]
    marker = f"<!-- artbot:request {key} -->"
    lines = [
        line.replace("- [ ] ", "- [x] ", 1) if line.endswith(marker) else line
        for line in body.split("\n")
    ]
    after = "\n".join(lines)
    sandbox.edit_issue(owner, name, tracking, body=after)
    return EditEvent.of_edit(tracking, sender or owner, body, after)


def run_demo(
    catalog: Catalog, items: Sequence[int] = DEMO_ITEMS, log: Callable[[str], None] = print
) -> DemoResult:
    with GitHubSandbox() as sandbox:
        tracking = seed(sandbox, catalog)
        log(
            f"sandbox: {sandbox.api_url} (repository {catalog.audit.repository}, "
            f"tracking issue #{tracking})"
        )
        repo = GitHubRepo(
            catalog.audit.repository,
            api_url=sandbox.api_url,
            token=SANDBOX_TOKEN,
            cache=EtagCache(),
        )
        counts: dict[str, int] = {}
        command = "open " + " ".join(f"--item {i}" for i in items)
        log(f"\n$ artbot {command}")
        sandbox.requests.clear()
        open_issues(catalog, repo, list(items), tracking, log=log)
        counts[command] = len(sandbox.requests.snapshot())
        log("\n$ artbot sync")
        sandbox.requests.clear()
        sync(catalog, repo, tracking, log=log)
        counts["sync"] = len(sandbox.requests.snapshot())
        asked = next((f.item for f in catalog.findings if f.item == TICKED_ITEM), None)
        if asked is not None and asked not in items:
            log(f'\n(a maintainer ticks "File the issue for item {asked}" in #{tracking})')
            event = tick_request(sandbox, catalog, tracking, f"file={asked}")
            log("$ artbot sync --event edited.json   # the edit's event, as requests.yml runs it")
            sandbox.requests.clear()
            sync(catalog, repo, tracking, log=log, event=event)
            counts[f"sync (files item {asked} as asked)"] = len(sandbox.requests.snapshot())
            items = (*items, asked)
        log("\n$ artbot sync   # again: nothing changed")
        sandbox.requests.clear()
        last = sync(catalog, repo, tracking, log=log)
        counts["sync (no change)"] = len(sandbox.requests.snapshot())
        owner, name = catalog.audit.repository.split("/")
        shown = []
        for item in items:
            issue = sandbox.get_issue(owner, name, last.issues[item].number)
            shown.append(
                DemoIssue(
                    item,
                    issue["number"],
                    issue["title"],
                    issue["state"],
                    issue.get("state_reason"),
                    issue["body"],
                    load_status(catalog.root, item) is not None,
                )
            )
        parent = sandbox.get_issue(owner, name, tracking)
        children = [
            sandbox.get_issue(owner, name, n) for n in sandbox.sub_issues(owner, name, tracking)
        ]
        return DemoResult(
            tracking,
            tuple(shown),
            read_block(parent["body"]) or "",
            counts,
            tuple((c["number"], c["state"], c["title"]) for c in children),
            parent.get("sub_issues_summary"),
        )


def describe(result: DemoResult) -> str:
    """What a maintainer would see first: the tracking checklist, its sub-issues, the issues
    filed (their bodies are :func:`bodies`, shown after this or written to files)."""
    out = [f"\n=== the checklist in tracking issue #{result.tracking_issue}\n", result.checklist]
    if result.progress is not None:
        done, total = result.progress["completed"], result.progress["total"]
        out.append(
            f"=== the sub-issues of tracking issue #{result.tracking_issue}, in GitHub's order "
            f"(progress: {done} of {total} closed, {result.progress['percent_completed']}%)\n"
        )
        out += [f"#{n} ({state}) {title}" for n, state, title in result.sub_issues]
        out.append("")
    out.append("=== the issues filed")
    for issue in result.issues:
        out.append(f"item {issue.item}: issue #{issue.number} ({_state(issue)}): {issue.title}")
        if not issue.status_recorded:
            out.append(
                f"  (no status recorded for item {issue.item}: filed as the audit describes it; "
                "`artbot verify --release latest --record` records one)"
            )
    out.append("")
    out.append("=== requests made: " + ", ".join(f"{k}: {v}" for k, v in result.requests.items()))
    return "\n".join(out)


def bodies(result: DemoResult) -> str:
    """The issues filed, each under its own heading, as GitHub shows them."""
    out = []
    for issue in result.issues:
        out.append(
            f"\n=== item {issue.item}: issue #{issue.number} ({_state(issue)}): {issue.title}\n"
        )
        out.append(issue.body)
    return "\n".join(out)


def _state(issue: DemoIssue) -> str:
    return issue.state + (f", {issue.state_reason}" if issue.state == "closed" else "")
