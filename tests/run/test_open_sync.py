"""open and sync end to end: PyGithub over real HTTP against the sandbox, faults included."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from artbot.github.client import GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.records.models import ACTIONS_BOT
from artbot.run.commands import Identity, open_issues, sync
from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import read_block
from tests.helpers.artrepo import (
    CANARY,
    NAME,
    OWNER,
    TRACKING,
    artbot,
    checklist,
    issues_for,
    item_line,
    repo_client,
    writes,
)
from tests.helpers.shipped import ISSUE_ITEMS
from tests.helpers.testsandbox import TestSandbox


def test_open_files_once_and_links_the_checklist(art: GitHubSandbox, root: Path) -> None:
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 0, result.output + result.stderr
    [issue] = issues_for(art, 7)
    assert issue["title"].startswith("Truncated importance sampling")
    assert issue["html_url"] in result.output
    block = checklist(art)
    title = "Truncated importance sampling falls back to the policy ratio"
    assert item_line(block, 7) == f"- [ ] 7. {title} — #{issue['number']}"
    assert re.search(r"^- \[ \] 1\. .* — #1108$", block, re.M)
    assert "- [ ] 4. BF16 LM-head output logits" in block  # not filed yet: no link

    art.requests.clear()
    again = artbot(art, root, "open", "--item", "7")
    assert again.exit_code == 0, again.output
    assert "already filed" in again.output
    assert len(issues_for(art, 7, state=None)) == 1
    assert writes(art) == []
    assert checklist(art).count("7. Truncated") == 1


def test_human_text_outside_the_block_is_kept(art: GitHubSandbox, root: Path) -> None:
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    after = art.get_issue(OWNER, NAME, TRACKING)["body"]
    start, end = after.index("<!-- artbot:checklist:start"), after.index("checklist:end -->") + 17
    assert (after[:start] + after[end:]).replace("\n", "") == before.replace("\n", "")


def test_dry_run_needs_no_token_and_writes_nothing(art: GitHubSandbox, root: Path) -> None:
    result = artbot(art, root, "open", "--item", "7", "--dry-run", token="")
    assert result.exit_code == 0, result.output + result.stderr
    assert "item 7: create issue" in result.output
    assert "Dry run -- nothing has been written." in result.output
    assert "**Expected:**" in result.output and "### Repro and test" in result.output
    assert writes(art) == []


def test_killed_between_create_and_checklist_then_rerun_converges(
    art: TestSandbox, root: Path
) -> None:
    # The identity is recorded before a tracking issue's first create (#31): file one first.
    assert artbot(art, root, "open", "--item", "4").exit_code == 0
    # The checklist write fails for good (as if the process died there), after the create.
    art.inject_fault("PATCH", rf"/issues/{TRACKING}$", "drop", times=50)
    first = artbot(art, root, "open", "--item", "7")
    assert first.exit_code == 1
    assert len(issues_for(art, 7)) == 1
    seven = [ln for ln in checklist(art).splitlines() if "] 7. " in ln]
    assert not any("— #" in ln for ln in seven)  # listed at most, never linked
    art.clear_faults()
    second = artbot(art, root, "open", "--item", "7")
    assert second.exit_code == 0, second.output + second.stderr
    [issue] = issues_for(art, 7, state=None)
    assert item_line(checklist(art), 7).endswith(f"— #{issue['number']}")


def test_502_after_the_create_took_effect_leaves_one_issue(art: TestSandbox, root: Path) -> None:
    art.inject_fault("POST", r"/issues$", 502, after_write=True)
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 0, result.output + result.stderr
    assert len(issues_for(art, 7, state=None)) == 1
    assert "had taken effect" in result.output


@pytest.mark.parametrize("retry_after", [1, None])
def test_secondary_rate_limit_waits_as_told(
    art: TestSandbox, root: Path, retry_after: int | None
) -> None:
    art.inject_fault("POST", r"/issues$", "secondary_rate_limit", retry_after=retry_after)
    started = time.monotonic()
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 0, result.output + result.stderr
    assert time.monotonic() - started >= 1.0  # Retry-After, else ARTBOT_SECONDARY_RATE_WAIT
    assert len(issues_for(art, 7)) == 1


def test_retries_exhausted_exit_1_with_one_line_then_rerun_finishes(
    art: TestSandbox, root: Path
) -> None:
    art.inject_fault("GET", r"/issues$", 502, times=50)
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 1
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "502" in errors[0], result.stderr
    assert "Traceback" not in result.stderr
    art.clear_faults()
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    assert len(issues_for(art, 7)) == 1


def test_concurrent_runs_end_with_one_issue_per_item(art: GitHubSandbox, root: Path) -> None:
    catalog = load_catalog(root)
    errors: list[BaseException] = []

    def run(fn) -> None:  # type: ignore[no-untyped-def]
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    # Four runs as github-actions[bot] at once (#21: trusted only when artbot runs as it, as
    # here; otherwise a sync that starts before the identity is recorded refuses, exit 1).
    def me() -> Identity:
        return Identity(authors=(ACTIONS_BOT,))

    jobs = [
        lambda: open_issues(catalog, repo_client(art), catalog.items, TRACKING, identity=me()),
        lambda: open_issues(catalog, repo_client(art), catalog.items, TRACKING, identity=me()),
        lambda: sync(catalog, repo_client(art), TRACKING, identity=me()),
        lambda: sync(catalog, repo_client(art), TRACKING, identity=me()),
    ]
    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for item in ISSUE_ITEMS:
        assert len(issues_for(art, item)) == 1, f"item {item}"
    sync(catalog, repo_client(art), TRACKING)
    block = checklist(art)
    for item in ISSUE_ITEMS:
        [issue] = issues_for(art, item)
        assert f"— #{issue['number']}" in item_line(block, item)


def test_human_edit_between_read_and_write_survives(art: TestSandbox, root: Path) -> None:
    catalog = load_catalog(root)
    open_issues(catalog, repo_client(art), [4, 5], TRACKING)
    art.set_issue_state(OWNER, NAME, issues_for(art, 4)[0]["number"], "closed", "completed")

    class HumanAfterFirstRead(GitHubRepo):
        reads = 0

        def get_issue(self, number: int, *, fresh: bool = False):  # type: ignore[no-untyped-def]
            issue = super().get_issue(number, fresh=fresh)
            if number == TRACKING and self.reads == 0:
                self.reads += 1
                body = art.get_issue(OWNER, NAME, TRACKING)["body"]
                art.edit_issue(OWNER, NAME, TRACKING, body=body + "\n\nA maintainer's note.\n")
            return issue

    repo = HumanAfterFirstRead(f"{OWNER}/{NAME}", api_url=art.api_url, token=CANARY)
    outcome = sync(catalog, repo, TRACKING)
    assert any("checklist" in d for d in outcome.done)
    body = art.get_issue(OWNER, NAME, TRACKING)["body"]
    assert body.endswith("A maintainer's note.\n")
    assert re.search(r"^- \[x\] \d+\. .* — #\d+", read_block(body) or "", re.M)


def test_body_over_the_limit_exits_2_before_any_request(art: GitHubSandbox, root: Path) -> None:
    path = root / "findings" / "07-tis-fallback.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("evidence: []", "evidence: []\nwhat_extra: x"), encoding="utf-8")
    path.write_text(text.replace("what: >-", "what: " + "x" * 70_000 + "\nold_what: >-", 1))
    path.write_text(text.replace("what: >-\n", "what: >-\n  " + "y" * 70_000 + "\n", 1))
    result = artbot(art, root, "open", "--item", "7")
    assert result.exit_code == 2, result.output + result.stderr
    assert "GitHub's limit is 65,536" in result.stderr
    assert art.requests.snapshot() == []


def test_sync_without_change_costs_one_304_and_no_writes(art: GitHubSandbox, root: Path) -> None:
    """#15: the tracking issue carries the audit's labels (the first sync adds them and its
    own tracking label), so the one labelled list returns it too."""
    assert artbot(art, root, "open", "--all").exit_code == 0
    first = artbot(art, root, "sync")  # labels #1108-#1110 and the tracking issue once
    assert first.exit_code == 0
    assert "tracking issue #1111: label it numerics, audit, audit:tracking" in first.output
    labels = {lbl["name"] for lbl in art.get_issue(OWNER, NAME, TRACKING)["labels"]}
    assert {"numerics", "audit", "audit:tracking"} <= labels
    art.requests.clear()
    assert artbot(art, root, "sync").exit_code == 0  # reads what that sync changed
    assert writes(art) == []
    art.requests.clear()
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output
    log = art.requests.snapshot()
    assert [(r.method, r.status) for r in log] == [("GET", 304)]
    assert "label it" not in result.output


def test_sync_updates_only_the_owned_region(art: GitHubSandbox, root: Path) -> None:
    assert artbot(art, root, "open", "--item", "7").exit_code == 0
    [issue] = issues_for(art, 7)
    art.edit_issue(OWNER, NAME, issue["number"], body=issue["body"] + "\nReviewer: agreed.\n")
    path = root / "findings" / "07-tis-fallback.yaml"
    text = path.read_text()
    assert "TIS exists for." in text
    path.write_text(text.replace("TIS exists for.", "TIS exists for (re-read)."))
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output
    body = art.get_issue(OWNER, NAME, issue["number"])["body"]
    assert "TIS exists for (re-read)." in body
    assert body.endswith("\nReviewer: agreed.\n")
    assert art.get_issue(OWNER, NAME, issue["number"])["state"] == "open"


def test_canary_token_never_appears(art: TestSandbox, root: Path, tmp_path: Path) -> None:
    outputs = []
    for args in (["open", "--item", "7"], ["sync"], ["--debug", "open", "--item", "8"]):
        outputs.append(artbot(art, root, *args))
    art.inject_fault("*", r".*", 502, times=100)
    outputs.append(artbot(art, root, "--debug", "sync"))
    assert outputs[-1].exit_code == 1
    art.clear_faults()
    for result in outputs:
        assert CANARY not in result.output + result.stderr
        assert CANARY not in repr(result.exception)
    assert CANARY not in repr(art.requests.snapshot())
    for path in root.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_text(encoding="utf-8", errors="replace")


def test_sync_verify_notes_and_comments_once_per_status_change(
    art: GitHubSandbox, root: Path
) -> None:
    from artbot.verify.code import CodeResult, CodeStatus

    catalog = load_catalog(root)
    open_issues(catalog, repo_client(art), [7, 10], TRACKING)
    fixed = [
        CodeResult(7, CodeStatus.fixed, "openpipe-art 0.5.21", "TIS skipped"),
        CodeResult(10, CodeStatus.reproduced, "openpipe-art 0.5.21", "ratio 0.866"),
    ]
    outcome = sync(catalog, repo_client(art), TRACKING, verified=("0.5.21", fixed))
    assert sum("commented" in d for d in outcome.done) == 2
    block = checklist(art)
    assert "7. Truncated importance sampling falls back to the policy ratio — #" in item_line(
        block, 7
    ) and item_line(block, 7).endswith("— no longer reproduces in openpipe-art 0.5.21")
    again = sync(catalog, repo_client(art), TRACKING, verified=("0.5.21", fixed))
    assert not any("commented" in d for d in again.done)
    n7 = issues_for(art, 7)[0]["number"]
    assert art.get_issue(OWNER, NAME, n7)["state"] == "open"  # never closed by artbot
    regressed = [CodeResult(7, CodeStatus.reproduced, "openpipe-art 0.5.22", "back")]
    third = sync(catalog, repo_client(art), TRACKING, verified=("0.5.22", regressed))
    assert [d for d in third.done if "commented" in d] == [f"item 7: commented on #{n7}"]
