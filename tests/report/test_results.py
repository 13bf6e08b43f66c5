"""Actions report what they did: each returns its results (done, skipped, failed and why), the
plan is logged first and each result once after it, and the step summary and ``--json`` are built
from the results. The dispatch is exhaustive: an action class without a case fails mypy."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from artbot.cli.demo import run_demo
from artbot.cli.summary import step_summary
from artbot.github.client import EtagCache, GitHubRepo
from artbot.records.catalog import Catalog, load_catalog
from artbot.report.output import outcome_json
from artbot.report.results import Journal, Result
from artbot.run.actions import Write
from artbot.run.commands import open_issues, sync
from artbot.run.execute import Budget, Execution, References, carry_out
from artbot.sandbox import GitHubSandbox
from tests.helpers.artrepo import CANARY, NAME, OWNER
from tests.helpers.testsandbox import TestSandbox

REPO = Path(__file__).resolve().parents[2]
TRACKING = 1111


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(REPO)


@pytest.fixture
def repo(art: GitHubSandbox) -> GitHubRepo:  # noqa: F811
    """ART as the audit left it (#1108-#1110 by hand, then #1111), through the adapter."""
    return GitHubRepo(f"{OWNER}/{NAME}", api_url=art.api_url, token=CANARY, cache=EtagCache())


def test_the_journal_logs_the_plan_then_each_result_once() -> None:
    lines: list[str] = []
    done: list[str] = []
    warnings: list[str] = []
    journal = Journal(lines.append, done, warnings)
    journal.plan("item 7: create issue\ntracking issue #1111: update the checklist")
    journal.add(
        Result.done("item 7: filed #1112"),
        None,
        Result.skipped("the checklist in #1111 is already as planned"),
        Result.failed("could not label #1108: 502"),
    )
    assert lines == [
        "plan:",
        "  item 7: create issue",
        "  tracking issue #1111: update the checklist",
        "item 7: filed #1112",
        "skipped: the checklist in #1111 is already as planned",
    ]
    assert done == ["item 7: filed #1112"]
    assert warnings == ["could not label #1108: 502"]  # printed once, by the report
    assert [r.status for r in journal.results] == ["done", "skipped", "failed"]


def test_demo_prints_each_line_once_after_the_plan(catalog: Catalog) -> None:
    """Each run: its one plan, then each thing it did, once. A sync that carries out a ticked
    request plans the filing as a Create of its own plan: one plan there too."""
    lines: list[str] = []
    run_demo(catalog, log=lines.append)
    runs: list[list[str]] = []
    for line in lines:
        if line.lstrip("\n").startswith("$ artbot"):
            runs.append([])
        elif runs and not line.lstrip("\n").startswith("("):  # "(a maintainer ticks ...)"
            runs[-1].append(line)
    assert len(runs) >= 3
    for run in runs:
        assert run[0] == "plan:", run
        assert run.count("plan:") == 1, run
        for segment in "\n".join(run).split("plan:\n")[1:]:
            block = segment.splitlines()
            plan = [line for line in block if line.startswith("  ")]
            results = block[len(plan) :]
            assert block[: len(plan)] == plan, block  # the plan first, in one block
            assert not [line for line in results if line.startswith("  ")], block
            assert len(results) == len(set(results)), results  # each result once
    first, second, last = runs[0], runs[1], runs[-1]
    assert sum(line.startswith("updated the checklist") for line in first) == 1
    assert sum(line.startswith("updated the checklist") for line in second) == 1
    assert [line for line in last if not line.startswith("  ")] == ["plan:"]  # nothing done


def _classes(union: Any) -> list[type]:
    out: list[type] = []
    for arg in typing.get_args(union):
        out += _classes(arg) if typing.get_args(arg) else [arg]
    return out


def test_every_write_class_has_a_case(catalog: Catalog, repo: GitHubRepo) -> None:
    """At run time too: no class of the union falls through to ``assert_never``."""
    journal = Journal(lambda _: None, [], [])
    ex = Execution(repo, Budget(), journal, References([]))
    classes = _classes(Write)
    assert len(classes) >= 16
    for cls in classes:
        bare: Any = object.__new__(cls)  # no fields: a handler that reads one raises AttributeError
        try:
            carry_out(ex, bare, None)
        except AssertionError as exc:
            assert "unreachable" not in str(exc), cls.__name__
        except (AttributeError, KeyError, TypeError):
            pass


def absolute(source: str) -> str:
    """artbot/run/execute.py's imports made absolute, so a copy of it type-checks elsewhere."""
    return source.replace("from ..", "from artbot.").replace("from .", "from artbot.run.")


def test_an_action_class_without_a_case_fails_mypy(tmp_path: Path) -> None:
    from mypy import api

    source = (REPO / "artbot" / "run" / "execute.py").read_text(encoding="utf-8")
    case = "        case Comment():\n"
    start = source.index(case)
    end = source.index("        case ", start + len(case))
    pruned = tmp_path / "artbot_pruned.py"
    text = source[:start] + source[end:]
    pruned.write_text(absolute(text), encoding="utf-8")
    out, _, status = api.run(
        [str(pruned), "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache")]
    )
    assert status == 1 and "assert_never" in out and "Comment" in out, out
    whole = tmp_path / "artbot_whole.py"
    whole.write_text(absolute(source), encoding="utf-8")
    out, _, status = api.run(
        [str(whole), "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache")]
    )
    assert status == 0, out


def test_a_label_that_failed_is_not_reported_as_labelled(
    catalog: Catalog,
    repo: GitHubRepo,
    art: TestSandbox,  # noqa: F811
) -> None:
    art.inject_fault("POST", r"/issues/1109/labels$", 502, times=10)  # GitHub refuses #1109
    outcome = sync(catalog, repo, TRACKING)
    by_item = {r.item: r for r in outcome.results if r.kind == "LinkPreset"}
    assert (by_item[1].status, by_item[2].status, by_item[3].status) == ("done", "failed", "done")
    assert "item 2: could not label #1109" in " ".join(outcome.warnings)
    summary = step_summary(catalog, outcome, dry_run=False)
    rows = {ln.split(".")[0]: ln for ln in summary.splitlines() if ln.startswith("| ")}
    assert "labelled" in rows["| 1"] and "labelled" in rows["| 3"]
    assert "labelled" not in rows["| 2"]
    results = outcome_json(outcome)["results"]
    [failed] = [r for r in results if r["item"] == 2 and r["action"] == "LinkPreset"]
    assert (failed["status"], failed["action"], failed["issue"]) == ("failed", "LinkPreset", 1109)


def test_open_results_name_their_items_and_json_carries_them(
    catalog: Catalog, repo: GitHubRepo
) -> None:
    outcome = open_issues(catalog, repo, [7], TRACKING)
    kinds = [(r.kind, r.item, r.status) for r in outcome.results]
    assert ("Create", 7, "done") in kinds
    assert ("UpdateChecklist", None, "done") in kinds
    assert outcome.done == [r.line for r in outcome.results if r.status == "done"]
    assert outcome_json(outcome)["results"] == [r.as_json() for r in outcome.results]
