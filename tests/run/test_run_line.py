"""One run is one straight line (artbot/run/): observe once, plan once, carry out once.

The planner is called once per run and nothing is written before its plan is complete; the
tracking issue's body is parsed once per run; a ticked request's issue is a Create of the
sync's own plan, not a second run inside it. What each decision is (filed, linked, left) is
tested as a value in test_plan.py; here, over HTTP against the sandbox, that it is made once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import artbot.run.commands as commands
from artbot.cli.demo import run_demo, tick_request
from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import Catalog, load_catalog
from artbot.run.actions import Create, Plan, UpdateChecklist
from artbot.run.commands import open_issues, sync
from artbot.sandbox import GitHubSandbox
from artbot.tracking.block import TrackingBlock
from artbot.tracking.checklist import read_block
from tests.helpers.artrepo import CANARY, NAME, OWNER, TRACKING, writes

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def catalog(root: Path) -> Catalog:
    return load_catalog(root)


@pytest.fixture
def repo(art: GitHubSandbox) -> GitHubRepo:
    """ART as the audit left it (#1108-#1110 by hand, then #1111), through the adapter."""
    return GitHubRepo(f"{OWNER}/{NAME}", api_url=art.api_url, token=CANARY, cache=EtagCache())


def block_of(art: GitHubSandbox) -> str:
    return read_block(art.get_issue(OWNER, NAME, TRACKING)["body"]) or ""


def creates(art: GitHubSandbox) -> list[str]:
    return [w for w in writes(art) if w == f"POST /repos/{OWNER}/{NAME}/issues"]


@pytest.fixture
def plans(monkeypatch: pytest.MonkeyPatch, art: GitHubSandbox) -> list[tuple[Plan, int]]:
    """Each plan the planner makes, with the number of writes made before it returned."""
    made: list[tuple[Plan, int]] = []
    real = commands.plan_run

    def counted(*args: Any) -> Plan:
        plan = real(*args)
        made.append((plan, len(writes(art))))
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


def test_open_plans_once_and_writes_only_after(
    catalog: Catalog,
    repo: GitHubRepo,
    art: GitHubSandbox,
    plans: list[tuple[Plan, int]],
    parses: list[str | None],
) -> None:
    outcome = open_issues(catalog, repo, [7, 9], TRACKING)
    assert len(plans) == 1 and plans[0][1] == 0  # the whole plan, before the first write
    assert len(parses) == 1  # the tracking issue's body, read once
    assert [a.item for a in plans[0][0].of(Create)] == [7, 9]
    assert outcome.plan.of(UpdateChecklist) and len(creates(art)) == 2


def test_a_ticked_request_is_a_create_of_the_syncs_one_plan(
    catalog: Catalog,
    repo: GitHubRepo,
    art: GitHubSandbox,
    plans: list[tuple[Plan, int]],
    parses: list[str | None],
) -> None:
    sync(catalog, repo, TRACKING)
    event = tick_request(art, catalog, TRACKING, "file=5")
    plans.clear()
    parses.clear()
    art.requests.clear()
    outcome = sync(catalog, repo, TRACKING, event=event)
    [(plan, written)] = plans
    assert written == 0  # nothing written before the plan was complete
    assert len(parses) == 1
    assert [a.item for a in plan.of(Create)] == [5]
    whole = outcome.plan  # with the block's write, rendered once after planning
    assert whole.actions.index(whole.of(Create)[0]) < whole.actions.index(
        whole.of(UpdateChecklist)[0]
    )
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
