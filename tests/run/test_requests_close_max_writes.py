"""Requests by checkbox, close_when_fixed and --max-writes, end to end: PyGithub over HTTP
against the sandbox. Status records are hand-written shapes (tests/helpers/statusdata.py), not
measurements, in a temporary checkout."""

from __future__ import annotations

import json
from pathlib import Path

from artbot.cli.demo import tick_request
from artbot.records.catalog import load_catalog
from artbot.sandbox import GitHubSandbox
from artbot.status import ClaimResult, FixEvidence, ItemStatus, SourceLine
from tests.helpers.artrepo import (
    NAME,
    OWNER,
    TRACKING,
    artbot,
    checklist,
    checkout_catalog,
    event_file,
    issues_for,
    item_line,
    prepared,
    repo_client,
    request_line,
    seed_audit,
    writes,
)
from tests.helpers.statusdata import F, claims_of, fixed_item, install, partial_item, point
from tests.helpers.testsandbox import TestSandbox


def test_a_ticked_request_files_the_item_once_and_clears_the_box(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    prepared(art, root)
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    tick_request(art, load_catalog(root), TRACKING, "file=5")
    after = art.get_issue(OWNER, NAME, TRACKING)["body"]
    assert request_line(checklist(art), "file=5").startswith("- [x] ")
    summary = tmp_path / "summary.md"
    event = event_file(tmp_path, OWNER, before, after)  # the owner: admin
    result = artbot(art, root, "sync", "--summary", str(summary), "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    [issue] = issues_for(art, 5)
    assert f"request in #{TRACKING}: filed item 5 as #{issue['number']}" in result.output
    assert f"— #{issue['number']}" in item_line(checklist(art), 5)
    assert "artbot:request file=5" not in checklist(art)  # filed: the request is gone
    assert f"filed item 5 as #{issue['number']}" in summary.read_text(encoding="utf-8")

    art.requests.clear()
    again = artbot(art, root, "sync")
    assert again.exit_code == 0, again.output + again.stderr
    assert writes(art) == []
    assert len(issues_for(art, 5, state=None)) == 1


def test_on_the_edit_path_a_tick_without_write_access_files_nothing_and_is_reverted(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    prepared(art, root)
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    tick_request(art, load_catalog(root), TRACKING, "file=5")
    after = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.set_permission(OWNER, NAME, "mallory", "triage")  # may edit issues, may not write
    art.requests.clear()
    event = event_file(tmp_path, "mallory", before, after)
    result = artbot(art, root, "sync", "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    asked = [r for r in art.requests.snapshot() if r.path.endswith("/permission")]
    assert [r.path for r in asked] == [f"/repos/{OWNER}/{NAME}/collaborators/mallory/permission"]
    assert issues_for(art, 5, state=None) == []
    assert not [w for w in writes(art) if w.endswith("/issues")]  # no create
    block = checklist(art)
    assert request_line(block, "file=5").startswith("- [ ] ")
    assert 'a tick by @mallory on "File the issue for item 5" was reverted' in block
    assert "reverted @mallory's tick" in result.output

    art.requests.clear()
    assert artbot(art, root, "sync").exit_code == 0
    assert writes(art) == []  # the note stays; nothing to do


def test_on_the_edit_path_an_earlier_tick_is_reverted_too(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    """mallory ticks, then edits again before artbot ran for the first edit: the second
    event's old body already holds the tick, and it is still not carried out."""
    prepared(art, root)
    tick_request(art, load_catalog(root), TRACKING, "file=5")
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.edit_issue(OWNER, NAME, TRACKING, body=before + "\n\nmore words")
    event = event_file(tmp_path, "mallory", before, before + "\n\nmore words")
    result = artbot(art, root, "sync", "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    assert issues_for(art, 5, state=None) == []
    assert request_line(checklist(art), "file=5").startswith("- [ ] ")


def test_an_edit_that_ticks_nothing_asks_no_permission(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    prepared(art, root)
    before = art.get_issue(OWNER, NAME, TRACKING)["body"]
    art.edit_issue(OWNER, NAME, TRACKING, body=before + "\n\nA maintainer's note.")
    art.requests.clear()
    event = event_file(tmp_path, "someone", before, before + "\n\nA maintainer's note.")
    result = artbot(art, root, "sync", "--event", str(event))
    assert result.exit_code == 0, result.output + result.stderr
    assert not [r for r in art.requests.snapshot() if r.path.endswith("/permission")]
    assert writes(art) == []


def test_a_recheck_without_verification_stays_ticked_and_writes_nothing(
    art: GitHubSandbox, root: Path
) -> None:
    """No torch in this run's reach is not simulated; a dry run never verifies, and a sync
    without a verifier (the library call) keeps the request pending."""
    from artbot.run.commands import sync

    prepared(art, root)
    event = tick_request(art, load_catalog(root), TRACKING, "recheck")
    art.requests.clear()
    outcome = sync(load_catalog(root), repo_client(art), TRACKING, event=event)
    assert any("re-check was asked for" in w for w in outcome.warnings)
    assert writes(art) == []
    assert request_line(checklist(art), "recheck").startswith("- [x] ")


def test_a_recheck_is_carried_out_by_the_verification_and_cleared(
    art: GitHubSandbox, root: Path
) -> None:
    """The verifier stands in for `verify --release latest`: it reports a version and no
    whole-item results (every item here either has a recorded status or none to note)."""
    from artbot.run.commands import sync

    prepared(art, root)
    event = tick_request(art, load_catalog(root), TRACKING, "recheck")
    calls: list[int] = []

    def verifier() -> tuple[str, list]:
        calls.append(1)
        return "0.5.23", []

    outcome = sync(load_catalog(root), repo_client(art), TRACKING, verifier=verifier, event=event)
    assert calls == [1]
    assert f"request in #{TRACKING}: re-checked against openpipe-art 0.5.23" in outcome.done
    assert request_line(checklist(art), "recheck").startswith("- [ ] ")
    art.requests.clear()
    again = sync(load_catalog(root), repo_client(art), TRACKING, verifier=verifier)
    assert calls == [1] and not again.done and writes(art) == []


def enable_close_when_fixed(root: Path) -> None:
    path = root / "findings" / "audit.yaml"
    text = path.read_text(encoding="utf-8")
    assert "\nclose_when_fixed: false\n" in text  # the catalog's own setting, off
    path.write_text(
        text.replace("\nclose_when_fixed: false\n", "\nclose_when_fixed: true\n"), "utf-8"
    )


def fixed_with_lines(old: ItemStatus, ids: list[str], release: str) -> ItemStatus:
    """``old`` plus a release fixing every claim, with fixing lines (hand-written)."""
    fix = FixEvidence(lines=[SourceLine(path="art/tinker/service.py", line=136, end=146)])
    newer = point("release", release, dict.fromkeys(ids, F))
    claims = {cid: ClaimResult(verdict=F, fix=fix) for cid in ids}
    return ItemStatus(
        item=old.item, points=[*old.points, newer.model_copy(update={"claims": claims})]
    )


def test_close_when_fixed_closes_once_with_one_comment(art: GitHubSandbox, root: Path) -> None:
    enable_close_when_fixed(root)
    catalog = load_catalog(root)
    finding = catalog.get(9)
    install(root, finding, partial_item(finding))
    assert artbot(art, root, "open", "--item", "9").exit_code == 0
    assert artbot(art, root, "sync").exit_code == 0
    [issue] = issues_for(art, 9)
    number = issue["number"]

    ids = [c.id for c in claims_of(finding)]
    install(root, finding, fixed_with_lines(partial_item(finding), ids, "0.5.24"))
    result = artbot(art, root, "sync")
    assert result.exit_code == 0, result.output + result.stderr
    closed = art.get_issue(OWNER, NAME, number)
    assert (closed["state"], closed["state_reason"]) == ("closed", "completed")
    comments = [c["body"] for c in repo_client(art).list_comments(number)]
    [comment] = [c for c in comments if "<!-- artbot:status " in c]
    assert "fixed in openpipe-art 0.5.24" in comment
    assert "`art/tinker/service.py:136-146`" in comment
    assert "close_when_fixed: true" in comment
    assert item_line(checklist(art), 9).startswith("- [x] 9.")
    assert art.get_issue(OWNER, NAME, 1110)["state"] == "open"  # never one artbot did not file

    art.requests.clear()
    again = artbot(art, root, "sync")
    assert again.exit_code == 0, again.output + again.stderr
    assert writes(art) == []


def test_without_close_when_fixed_sync_never_closes(art: GitHubSandbox, root: Path) -> None:
    catalog = load_catalog(root)
    finding = catalog.get(9)
    install(root, finding, partial_item(finding))
    assert artbot(art, root, "open", "--item", "9").exit_code == 0
    ids = [c.id for c in claims_of(finding)]
    install(root, finding, fixed_with_lines(partial_item(finding), ids, "0.5.24"))
    assert artbot(art, root, "sync").exit_code == 0
    [issue] = issues_for(art, 9)
    assert issue["state"] == "open"


def test_a_sync_stopped_by_max_writes_summarises_what_is_left(
    art: GitHubSandbox, root: Path, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.md"
    result = artbot(art, root, "sync", "--max-writes", "1", "--summary", str(summary), "--json")
    assert result.exit_code == 0, result.output + result.stderr
    report = json.loads(result.stdout)
    assert report["stopped"] == "stopped after 1 write(s) (--max-writes 1)"
    assert len(writes(art)) == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith(
        "### artbot sync (stopped after 1 write(s) (--max-writes 1); what is left)"
    )
    rest = artbot(art, root, "sync")
    assert rest.exit_code == 0, rest.output + rest.stderr
    art.requests.clear()
    assert artbot(art, root, "sync").exit_code == 0
    assert writes(art) == []


def test_a_run_cut_short_reports_exactly_the_writes_github_received(
    sandbox: TestSandbox, tmp_path: Path
) -> None:
    """``open --item 7`` with item 7 recorded fixed (filed, then closed: two writes), stopped by
    ``--max-writes N`` for every N below the whole run's writes: what the report says was done
    is what GitHub received, one line per write, and the next run does the rest."""

    def run(*limit: str) -> tuple[Path, dict, list[str]]:
        sandbox.reset()
        seed_audit(sandbox)
        root = checkout_catalog(tmp_path / f"run{len(list(tmp_path.iterdir()))}")
        install(root, load_catalog(root).get(7), fixed_item(load_catalog(root).get(7)))
        result = artbot(sandbox, root, "open", "--item", "7", *limit, "--json")
        assert result.exit_code == 0, result.output + result.stderr
        report = json.loads(result.stdout)
        got = writes(sandbox)
        done = [r for r in report["results"] if r["status"] == "done"]
        assert len(report["done"]) == len(done) == len(got), (limit, report["done"], got)
        return root, report, got

    _, report, whole = run()
    assert report["stopped"] is None and len(whole) >= 3
    kinds = [r["action"] for r in report["results"]]
    assert kinds[kinds.index("Create") + 1] == "CloseFixed"  # one write each
    for n in range(1, len(whole)):
        root, report, got = run("--max-writes", str(n))
        assert got == whole[:n], n
        assert report["stopped"] == f"stopped after {n} write(s) (--max-writes {n})"
        sandbox.requests.clear()
        rest = artbot(sandbox, root, "open", "--item", "7")
        assert rest.exit_code == 0, rest.output + rest.stderr
        assert len(writes(sandbox)) <= len(whole) - n, n  # the rest, nothing twice
        [issue] = issues_for(sandbox, 7, state=None)
        assert (issue["state"], issue["state_reason"]) == ("closed", "completed"), n
