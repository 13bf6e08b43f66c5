"""The executor sends the plan and decides nothing a test of the plan could not see (#39.1).

For each command and scenario, the plan is built first (a dry run: observe, render, plan,
render the block), then the run is made for real, and what the sandbox received is compared
with the plan: the same plan is carried out; every write is one the plan names, in its order;
each issue is filed with the body the plan holds, each comment says what the plan says, each
owned region is the plan's, and the block written is the plan's text with the issues filed
earlier in the run looked up (:func:`artbot.run.blockwrite.ref`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from artbot.cli.demo import tick_request
from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import load_catalog
from artbot.records.marker import owned_region
from artbot.render.status_view import FILED_CLOSED
from artbot.run.actions import (
    CloseDuplicate,
    CloseFixed,
    CloseWhenFixed,
    Comment,
    Create,
    CreateLabel,
    EditBody,
    LabelTracking,
    LinkPreset,
    Plan,
    StatusChange,
    UpdateChecklist,
)
from artbot.run.blockwrite import ref
from artbot.run.commands import Outcome, open_issues, sync
from artbot.sandbox import GitHubSandbox
from artbot.tracking.checklist import read_block
from artbot.tracking.subissues import AddSubIssue, MoveSubIssue, RemoveSubIssue
from tests.helpers.artrepo import CANARY, NAME, OWNER, TRACKING
from tests.helpers.statusdata import fixed_item, install
from tests.helpers.testsandbox import TestSandbox

API = f"/repos/{OWNER}/{NAME}"
Run = Callable[..., Outcome]


def sent(plan: Plan, filed: Mapping[int, int]) -> list[str]:
    """The writes ``plan`` names, as the requests GitHub receives (``filed``: item -> issue
    filed by the run, for a fixed item's close)."""
    out: list[str] = []
    for a in plan.actions:
        match a:
            case CreateLabel():
                out.append(f"POST {API}/labels")
            case LabelTracking() | LinkPreset():
                out.append(f"POST {API}/issues/{a.issue}/labels")
            case Create():
                out.append(f"POST {API}/issues")
            case CloseFixed() if a.issue is None:
                out.append(f"PATCH {API}/issues/{filed[a.item]}")
            case CloseFixed() | CloseDuplicate() | CloseWhenFixed() | EditBody():
                out.append(f"PATCH {API}/issues/{a.issue}")
            case StatusChange() if a.comment is not None:
                out.append(f"POST {API}/issues/{a.issue}/comments")
            case Comment():
                out.append(f"POST {API}/issues/{a.issue}/comments")
            case AddSubIssue():
                out.append(f"POST {API}/issues/{a.parent}/sub_issues")
            case MoveSubIssue():
                out.append(f"PATCH {API}/issues/{a.parent}/sub_issues/priority")
            case RemoveSubIssue():
                out.append(f"DELETE {API}/issues/{a.parent}/sub_issue")
            case UpdateChecklist():
                out.append(f"PATCH {API}/issues/{a.issue}")
    return out


def carried_out(
    art: GitHubSandbox, run: Run, *args: object, **kwargs: object
) -> tuple[Plan, Outcome]:
    """The plan of a dry run, then the run itself; checks that it carried out that plan."""
    planned = run(*args, dry_run=True, **kwargs).plan
    art.requests.clear()
    outcome = run(*args, **kwargs)
    assert outcome.plan == planned and outcome.stopped is None
    return planned, outcome


def check(art: GitHubSandbox, repo: GitHubRepo, plan: Plan, outcome: Outcome) -> None:
    """What the sandbox received is what ``plan`` says, write by write and word by word."""
    filed = {item: outcome.issues[item].number for item in (c.item for c in plan.of(Create))}
    got = [f"{r.method} {r.path}" for r in art.requests.snapshot() if r.method != "GET"]
    assert got == sent(plan, filed)
    for create in plan.of(Create):
        issue = art.get_issue(OWNER, NAME, filed[create.item])
        assert (issue["title"], issue["body"]) == (create.title, create.body)
        assert sorted(label["name"] for label in issue["labels"]) == sorted(create.labels)
    for edit in plan.of(EditBody):
        body = art.get_issue(OWNER, NAME, edit.issue)["body"]
        assert owned_region(body) == owned_region(edit.body)
    said = [a.comment for a in plan.of(StatusChange) if a.comment is not None]
    said += [a.body for a in plan.of(Comment)]
    issues = {a.issue for a in (*plan.of(StatusChange), *plan.of(Comment))}
    posted = [c.get("body") for n in sorted(issues) for c in repo.list_comments(n)]
    assert all(text in posted for text in said)
    for update in plan.of(UpdateChecklist):
        text = update.write.text
        for item, number in filed.items():
            text = re.sub(rf"(?<!\d){ref(item)}(?!\d)", str(number), text)
        block = read_block(art.get_issue(OWNER, NAME, TRACKING)["body"])
        assert block == text == outcome.checklist


@pytest.fixture
def repo(art: GitHubSandbox) -> GitHubRepo:
    return GitHubRepo(f"{OWNER}/{NAME}", api_url=art.api_url, token=CANARY, cache=EtagCache())


def test_open_first_then_steady(art: GitHubSandbox, root: Path, repo: GitHubRepo) -> None:
    catalog = load_catalog(root)
    plan, outcome = carried_out(art, open_issues, catalog, repo, [7, 9], TRACKING)
    assert [c.item for c in plan.of(Create)] and plan.of(UpdateChecklist)
    check(art, repo, plan, outcome)
    plan, outcome = carried_out(art, open_issues, catalog, repo, [7], TRACKING)
    assert sent(plan, {}) == []  # steady: found, up to date
    check(art, repo, plan, outcome)


def test_open_of_a_fixed_item_files_it_then_closes_it(
    art: GitHubSandbox, root: Path, repo: GitHubRepo
) -> None:
    install(root, load_catalog(root).get(7), fixed_item(load_catalog(root).get(7)))
    catalog = load_catalog(root)
    plan, outcome = carried_out(art, open_issues, catalog, repo, [7], TRACKING)
    [create] = plan.of(Create)
    assert create.fixed_in and create.body.startswith(FILED_CLOSED)
    check(art, repo, plan, outcome)
    assert outcome.issues[7].state == "closed"


def test_sync_first_then_after_changes_then_with_nothing_to_do(
    art: TestSandbox, root: Path, repo: GitHubRepo
) -> None:
    catalog = load_catalog(root)
    open_issues(catalog, repo, [4, 5], TRACKING)
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING)  # labels, links, sub-issues
    assert plan.of(LabelTracking) and plan.of(AddSubIssue) and plan.of(MoveSubIssue)
    check(art, repo, plan, outcome)
    four = outcome.issues[4].number
    art.set_issue_state(OWNER, NAME, four, "closed", "completed")
    body = art.get_issue(OWNER, NAME, outcome.issues[5].number)["body"]
    stale = body.replace("<!-- artbot:body:end -->", "stale\n<!-- artbot:body:end -->")
    art.edit_issue(OWNER, NAME, outcome.issues[5].number, body=stale)
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING)
    assert plan.of(EditBody) and plan.of(UpdateChecklist)
    check(art, repo, plan, outcome)
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING)
    assert sent(plan, {}) == []
    check(art, repo, plan, outcome)


def test_sync_of_a_status_change_comments_then_edits(
    art: GitHubSandbox, root: Path, repo: GitHubRepo
) -> None:
    catalog = load_catalog(root)
    open_issues(catalog, repo, [7], TRACKING)
    sync(catalog, repo, TRACKING)
    install(root, catalog.get(7), fixed_item(catalog.get(7)))
    plan, outcome = carried_out(art, sync, load_catalog(root), repo, TRACKING)
    [change] = plan.of(StatusChange)
    assert change.comment and plan.of(EditBody)
    check(art, repo, plan, outcome)


def test_sync_of_ticks_a_writer_made_and_one_nobody_did(
    art: GitHubSandbox, root: Path, repo: GitHubRepo
) -> None:
    catalog = load_catalog(root)
    open_issues(catalog, repo, [4], TRACKING)
    sync(catalog, repo, TRACKING)
    event = tick_request(art, catalog, TRACKING, "recheck", sender="someone")  # a reader
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING, event=event)
    assert plan.of(UpdateChecklist)  # the tick reverted, with the note
    check(art, repo, plan, outcome)
    tick_request(art, catalog, TRACKING, "file=6")  # no edit event names it: cleared
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING)
    assert not plan.of(Create) and plan.of(UpdateChecklist)
    check(art, repo, plan, outcome)


def test_sync_files_what_a_writer_ticked(art: GitHubSandbox, root: Path, repo: GitHubRepo) -> None:
    catalog = load_catalog(root)
    open_issues(catalog, repo, [5], TRACKING)
    sync(catalog, repo, TRACKING)
    event = tick_request(art, catalog, TRACKING, "file=4")  # the owner's edit
    plan, outcome = carried_out(art, sync, catalog, repo, TRACKING, event=event)
    assert [c.item for c in plan.of(Create)] == [4]
    check(art, repo, plan, outcome)
