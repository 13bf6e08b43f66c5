"""One run is one straight line (artbot/run/): observe once, plan once, carry out once.

The planner is called once per run and nothing is written before its plan is complete; the
tracking issue's body is parsed once per run; a ticked request's issue is a Create of the
sync's own plan, not a second run inside it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import artbot.run.commands as commands
from artbot.catalog import Catalog, load_catalog
from artbot.cli.demo import run_demo
from artbot.run.actions import Create, Plan, UpdateChecklist
from artbot.run.commands import open_issues, sync
from artbot.tracking.block import TrackingBlock
from tests.fakes import TRACKING, MemoryRepo, as_the_audit_left_it

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(REPO)


@pytest.fixture
def repo() -> MemoryRepo:
    return as_the_audit_left_it(MemoryRepo())


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch, repo: MemoryRepo) -> list[tuple[Plan, int]]:
    """Each plan the planner makes, with the number of writes made before it returned."""
    made: list[tuple[Plan, int]] = []
    real = commands.plan_run

    def counted(*args: Any) -> Plan:
        plan = real(*args)
        made.append((plan, len(repo.log)))
        return plan

    monkeypatch.setattr(commands, "plan_run", counted)
    return made


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    seen: list[str | None] = []
    real = TrackingBlock.parse.__func__  # type: ignore[attr-defined]

    def counted(cls: type[TrackingBlock], body: str | None) -> TrackingBlock:
        seen.append(body)
        return real(cls, body)  # type: ignore[no-any-return]

    monkeypatch.setattr(TrackingBlock, "parse", classmethod(counted))
    return seen


def tick(repo: MemoryRepo, key: str) -> None:
    issue = repo.issues[TRACKING]
    marker = f"<!-- artbot:request {key} -->"
    lines = [
        ln.replace("- [ ] ", "- [x] ", 1) if ln.endswith(marker) else ln
        for ln in issue.body.split("\n")
    ]
    repo.edit_issue(TRACKING, body="\n".join(lines))


def test_open_plans_once_and_writes_only_after(
    catalog: Catalog, repo: MemoryRepo, plans: list[tuple[Plan, int]], parses: list[str | None]
) -> None:
    outcome = open_issues(catalog, repo, [7, 9], TRACKING)
    assert len(plans) == 1 and plans[0][1] == 0  # the whole plan, before the first write
    assert len(parses) == 1  # the tracking issue's body, read once
    assert [a.item for a in plans[0][0].of(Create)] == [7, 9]
    assert outcome.plan.of(UpdateChecklist) and any("create #" in w for w in repo.log)


def test_a_ticked_request_is_a_create_of_the_syncs_one_plan(
    catalog: Catalog, repo: MemoryRepo, plans: list[tuple[Plan, int]], parses: list[str | None]
) -> None:
    sync(catalog, repo, TRACKING)
    tick(repo, "file=5")
    plans.clear()
    parses.clear()
    before = len(repo.log)
    outcome = sync(catalog, repo, TRACKING)
    [(plan, writes)] = plans
    assert writes == before  # nothing written before the plan was complete
    assert len(parses) == 1
    assert [a.item for a in plan.of(Create)] == [5]
    assert plan.actions.index(plan.of(Create)[0]) < plan.actions.index(plan.of(UpdateChecklist)[0])
    assert any(line.startswith("request in #1111: filed item 5 as #") for line in outcome.done)
    again = sync(catalog, repo, TRACKING)
    assert again.plan.of(Create) == [] and again.done == []


def test_the_demo_prints_each_plan_once_and_files_the_request_in_its_plan(
    catalog: Catalog,
) -> None:
    lines: list[str] = []
    run_demo(catalog, log=lines.append)
    runs: list[list[str]] = []
    for line in lines:
        if line.lstrip("\n").startswith("$ artbot"):
            runs.append([])
        elif runs:
            runs[-1].append(line)
    assert all(run.count("plan:") == 1 for run in runs), runs
    asked = next(run for run in runs if any("carry out the ticked request" in ln for ln in run))
    assert "  item 5: create issue 'TrainerRank accumulates LoRA gradients in BF16'" in asked
    urls = [ln for run in runs for ln in run if "/issues/" in ln]
    assert len(urls) == len(set(urls))  # each filed issue's URL once
