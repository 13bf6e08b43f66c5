"""apply through the pure fake: open and sync on :class:`tests.fakes.MemoryRepo`, no HTTP.

The decisions (what is filed, linked, written once) are tested here; what only the adapter
can get wrong (retries, ETags, faults, PyGithub's requests) over HTTP in test_apply.py. The
fake passes the same contract as the adapter (test_repo_contract.py).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from artbot.catalog import Catalog, load_catalog
from artbot.run.commands import open_issues
from artbot.tracking.checklist import read_block
from tests.fakes import MemoryRepo, as_the_audit_left_it

ROOT = Path(__file__).resolve().parents[1]
TRACKING = 1111


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


@pytest.fixture
def repo() -> MemoryRepo:
    """ART as the audit left it: #1108-#1110 filed by hand (no labels yet), then #1111."""
    return as_the_audit_left_it(MemoryRepo())


def test_open_through_the_repo_interface_files_once(catalog: Catalog, repo: MemoryRepo) -> None:
    first = open_issues(catalog, repo, [7], TRACKING)
    [created] = [line for line in repo.log if line.startswith("create")]
    assert first.issues[7].number == int(created.split("#")[1])
    block = read_block(repo.issues[TRACKING].body) or ""
    assert "] 7. " in block and f"— #{first.issues[7].number}" in block

    repo.log.clear()
    second = open_issues(catalog, repo, [7], TRACKING)
    assert second.issues[7].number == first.issues[7].number
    assert not [line for line in repo.log if line.startswith("create")]


def test_preset_items_are_linked_and_never_filed(catalog: Catalog, repo: MemoryRepo) -> None:
    outcome = open_issues(catalog, repo, [1, 2, 3], TRACKING)
    assert not [line for line in repo.log if line.startswith("create")]
    assert "has its own issue #1108" in outcome.plan.text()
    block = read_block(repo.issues[TRACKING].body) or ""
    assert "— #1108" in block and "— #1110" in block


def test_a_dry_run_writes_nothing(catalog: Catalog, repo: MemoryRepo) -> None:
    before = dict(repo.issues)
    open_issues(catalog, repo, [7, 8], TRACKING, dry_run=True)
    assert repo.log == [] and repo.issues == before


def test_sync_keeps_a_maintainer_note_outside_the_owned_region(
    catalog: Catalog, repo: MemoryRepo
) -> None:
    from artbot.run.commands import sync

    number = open_issues(catalog, repo, [7], TRACKING).issues[7].number
    noted = repo.issues[number].body + "\nReviewer: agreed.\n"
    repo.issues[number] = replace(repo.issues[number], body=noted)
    repo.log.clear()
    sync(catalog, repo, TRACKING)
    assert not [line for line in repo.log if line.startswith(f"edit #{number}")]
    assert repo.issues[number].body == noted


# --- sub-issues through the repo interface (over HTTP: test_apply_subissues.py) ----------


def test_open_and_sync_make_the_items_issues_sub_issues_in_item_order(
    catalog: Catalog, repo: MemoryRepo
) -> None:
    from artbot.run.commands import sync
    from artbot.tracking.subissues import SubIssueRecord

    eight = open_issues(catalog, repo, [8], TRACKING).issues[8].number
    seven = open_issues(catalog, repo, [7], TRACKING).issues[7].number
    assert repo.subs[TRACKING] == [eight, seven]  # each appended as it was filed
    sync(catalog, repo, TRACKING)
    assert repo.subs[TRACKING] == [1108, 1109, 1110, seven, eight]
    record = SubIssueRecord.find(read_block(repo.issues[TRACKING].body))
    assert record == SubIssueRecord(added=(1108, 1109, 1110, seven, eight))

    repo.log.clear()
    again = sync(catalog, repo, TRACKING)
    assert repo.log == [] and not again.warnings


def test_an_issue_with_another_parent_is_reported_once_and_not_moved(
    catalog: Catalog, repo: MemoryRepo
) -> None:
    from artbot.run.commands import sync

    repo.subs[900] = [1109]
    first = sync(catalog, repo, TRACKING)
    assert repo.subs[900] == [1109] and repo.subs[TRACKING] == [1108, 1110]
    assert any("#1109 already has the parent #900" in w for w in first.warnings)
    assert "#1109 (item 2) already has the parent issue #900" in (
        read_block(repo.issues[TRACKING].body) or ""
    )
    repo.log.clear()
    second = sync(catalog, repo, TRACKING)  # remembered: no second try
    assert repo.log == [] and not second.warnings
    moved = sync(catalog, repo, TRACKING, replace_parent=True)
    assert repo.subs[TRACKING] == [1108, 1109, 1110] and repo.subs[900] == []
    assert "already has the parent" not in (read_block(repo.issues[TRACKING].body) or "")
    assert not moved.warnings
