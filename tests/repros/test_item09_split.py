"""Item 9's split (issue #53): each claim's inputs are drawn and its verdict judged ART-free
(``repros/_tinker_oracle.py``, the item's ``ORACLES``), on what the check's process measured.

The fast tests hold the judges to hand-made raw facts and the oracle to its promises (no ART,
no torch; every dimension's maximum among the edges). The slow one runs ``check_art`` on a fake
and on a fix with plans drawn from two seeds, and judges the tape again outside the check: the
check measured exactly the planned inputs, and the judge alone gives the verdict.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import load_catalog
from artbot.repro.scripts import import_script
from artbot.verify.tree import open_tree
from tests.helpers.controls import ADVERSARIAL, controlled_copy, load_adversarial, load_control
from tests.helpers.wheels import ArtWheels

ROOT = Path(__file__).resolve().parents[2]
REPROS = ROOT / "repros"
oracle = import_script(REPROS / "_tinker_oracle.py", "_artbot_test_tinker_oracle")
STEPS, MASKS = oracle.STEPS, oracle.MASKS


# --- the judges on hand-made raw facts -----------------------------------------------------


def _datum(positions: list[int], row: list[int]) -> dict[str, Any]:
    """A datum as ART builds it from a mask: the row's tokens there, targets shifted by one."""
    tokens = [row[p] for p in positions]
    return {
        "input": oracle.runs(tokens),
        "target": oracle.runs([*tokens[1:], 0]),
        "writes": oracle.runs(positions),
    }


def _two_branch(leak: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit's two-branch row (prompt of ``shared`` + 1 tokens, completions of 2): its root,
    then each branch with the repeated last prompt token; with ``leak`` the second branch's datum
    holds the first branch too, as 0.5.20's masks make it."""
    case = oracle.mask_case(1, [2, 2])
    shared = 4
    (seq_a, seq_b) = oracle.sequences(case, shared + 1)[0]
    row = seq_a[:shared] + seq_a[shared:] + seq_b[shared:] + [0] * 3
    root, a, b = list(range(shared)), [4, 5, 6], [7, 8, 9]
    datums = [_datum(root, row), _datum(root + a, row), _datum(root + (a + b if leak else b), row)]
    return case, {"shared": shared, "rows": [{"tokens": oracle.runs(row), "datums": datums}]}


def test_the_mask_judge_passes_own_contexts_and_fails_a_sibling_in_the_context() -> None:
    case, raw = _two_branch(leak=False)
    assert oracle.mask_judge(case, raw) is None
    case, raw = _two_branch(leak=True)
    failure = oracle.mask_judge(case, raw)
    assert failure is not None and failure.measured == "2 of 4 tokens"


def test_the_mask_judge_fails_a_token_no_datum_scores_or_a_wrong_target() -> None:
    case, raw = _two_branch(leak=False)
    raw["rows"][0]["datums"].pop()  # the second branch's datum never sent
    assert oracle.mask_judge(case, raw).measured == "2 of 4 tokens"
    case, raw = _two_branch(leak=False)
    raw["rows"][0]["datums"][1]["target"] = oracle.runs([7] * 7)
    assert oracle.mask_judge(case, raw).measured == "2 of 4 tokens"
    case, raw = _two_branch(leak=False)
    raw["rows"][0]["tokens"] = oracle.runs([0] * 13)  # the completions not in any row
    assert oracle.mask_judge(case, raw).measured == "4 of 4 tokens"


def test_the_step_judge_wants_one_step_whatever_the_rows() -> None:
    case = oracle.step_case(129)
    assert oracle.step_judge(case, {"optim_steps": 1, "packed_rows": 129}) is None
    assert oracle.step_judge(case, {"optim_steps": 2, "packed_rows": 129}) is not None
    assert oracle.step_judge(case, {"optim_steps": 0, "packed_rows": 129}) is not None


def test_the_judges_fail_raw_facts_they_cannot_read() -> None:
    case, raw = _two_branch(leak=False)
    raw["rows"][0]["tokens"] = [[100_000, 10**12, 1]]  # would decode to a trillion tokens
    assert oracle.mask_judge(case, raw) is not None
    raw["rows"][0]["tokens"] = [[100_000, 10**12, 1], [0, -(10**12), 0]]  # summing to nothing
    assert oracle.mask_judge(case, raw) is not None
    huge = oracle.mask_case(1, [2, 2], groups=10**9)  # a shrunk case the check's process chose
    assert oracle.mask_judge(huge, _two_branch(leak=False)[1]) is not None
    unreadable: list[Any] = [None, {}, {"shared": 4}, {"shared": 4, "rows": [{"tokens": "x"}]}]
    for bad in unreadable:
        assert oracle.mask_judge(case, bad) is not None
    no_count: list[Any] = [
        None,
        {},
        {"optim_steps": True},
        {"optim_steps": 1.0},
        {"optim_steps": "1"},
    ]
    for bad in no_count:
        assert oracle.step_judge(oracle.step_case(2), bad) is not None


def test_runs_are_lossless() -> None:
    rng = random.Random(5)
    for values in ([], [0] * 9, list(range(7, 30)), [rng.randint(0, 3) for _ in range(200)]):
        assert oracle.decode(oracle.runs(values)) == values
    assert oracle.runs([3, 4, 5, 0, 0, 0]) == [[3, 3, 1], [0, 3, 0]]


# --- the oracle's promises -------------------------------------------------------------------


def test_the_oracle_imports_neither_art_nor_torch() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(REPROS)!r}); import _tinker_oracle as o, random; "
        "[o.ORACLES[c].plan(random.Random(1)) for c in o.ORACLES]; "
        "assert not {'torch', 'art'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_edges_reach_every_dimension_s_maximum_and_art_s_defaults() -> None:
    steps, masks = oracle.step_edges(), oracle.mask_edges()
    assert {len(c["completion lengths"]) for c in steps} >= {1, 9, 128, 129, 512}
    assert any(c["pack_results"] and len(c["completion lengths"]) == 512 for c in steps)
    biggest = masks[1]  # the covering array's first input: every dimension at its maximum
    assert (biggest["extra"], biggest["groups"], biggest["completion lengths"]) == (
        32,
        8,
        [512] * 6,
    )
    for edges in (steps, masks):
        assert any(all(c[k] == v for k, v in oracle.DEFAULT_CONFIG.items()) for c in edges)
        for key, values in oracle.CONFIG_DIMENSIONS.items():
            assert {c[key] for c in edges} == set(values)


def test_a_plan_is_json_and_its_draws_depend_on_the_seed() -> None:
    for cid, spec in oracle.ORACLES.items():
        a, b = spec.plan(random.Random(1)), spec.plan(random.Random(2))
        assert json.loads(json.dumps(a)) == a
        edges = len(spec.edges())
        assert a[:edges] == b[:edges] and a[edges:] != b[edges:], cid
        assert len(a) == edges + spec.draws


# --- check_art on a plan, judged again outside it --------------------------------------------


def _verdicts(found: dict[str, Any]) -> dict[str, str]:
    return {cid: "reproduced" if c["verdict"] else "fixed" for cid, c in found["claims"].items()}


def _rejudged(tape: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """The verdict from the tape alone: reproduced when any entry fails the claim's judge."""
    tape = json.loads(json.dumps(tape))  # as it crosses to artbot
    return {
        cid: "reproduced"
        if any(oracle.ORACLES[cid].judge(e["case"], e["raw"]) for e in entries)
        else "fixed"
        for cid, entries in tape.items()
    }


@pytest.mark.repro
@pytest.mark.parametrize(
    ("tree", "expect"),
    [
        ("fake", {MASKS: "reproduced", STEPS: "reproduced"}),
        ("fix", {MASKS: "fixed", STEPS: "fixed"}),
    ],
)
def test_check_art_measures_artbot_s_plan_and_the_judge_decides(
    tree: str, expect: dict[str, str], art_wheels: ArtWheels, tmp_path: Path
) -> None:
    """The fake: 0.5.20's masks with the optimizer stepped every 128th row (one step for a
    GRPO group of 128, two for 129 trajectories); the fix: item09.toml's on 0.5.20."""
    release = art_wheels.tree("0.5.20")
    if tree == "fake":
        fake = load_adversarial(ADVERSARIAL / "item09_fake_step_every_128th_row.toml")
        root = controlled_copy(release, tmp_path / tree, fake.edits)
    else:
        control = load_control(9)
        assert control is not None
        root = controlled_copy(release, tmp_path / tree, control.edits("fix", "0.5.20"))
    item09 = import_script(REPROS / "item09_tinker_masks.py", "_artbot_test_item09_split")
    assert item09.ORACLES is oracle.ORACLES or item09.ORACLES.keys() == oracle.ORACLES.keys()
    audit = load_catalog(ROOT).audit
    plans = []
    for seed in (20_261_206, 53):
        plan = {cid: spec.plan(random.Random(seed)) for cid, spec in item09.ORACLES.items()}
        plans.append(plan)
        with open_tree(root, audit, label=f"0.5.20 + {tree}").modules() as art:
            art.plan = plan
            found = item09.check_art(art)
            tape = art.tape
        for cid, cases in plan.items():
            # The planned inputs in artbot's order, every one of them for a fixed claim, up to
            # the first failure for a reproduced one (the shrinking's inputs follow it).
            judged = [oracle.ORACLES[cid].judge(e["case"], e["raw"]) for e in tape[cid]]
            first = next((n for n, f in enumerate(judged) if f is not None), len(cases) - 1)
            assert [e["case"] for e in tape[cid][: first + 1]] == cases[: first + 1], cid
            if expect[cid] == "fixed":
                assert len(tape[cid]) == len(cases), cid
            assert found["claims"][cid]["domain"]["seed"] is None
        assert _rejudged(tape) == _verdicts(found) == expect
    assert plans[0] != plans[1]


@pytest.mark.repro
@pytest.mark.parametrize(
    ("edit", "packs", "rows"), [(None, False, "2 rows"), ("fake", True, "1 row")]
)
def test_the_tinker_path_s_pack_results_is_run_through_the_backend(
    edit: str | None, packs: bool, rows: str, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    """Which layout ART's Tinker path packs is what a ``TinkerBackend`` built as ART builds it
    does in LocalBackend's ``_prepare_training_batch`` (issue #50: run, not read): 0.5.23 as
    released packs a group's two trajectories into two rows; with the caller-side fake that sets
    ``_supports_result_packing`` in TinkerBackend, into one."""
    root = art_wheels.tree("0.5.23")
    if edit is not None:
        fake = load_adversarial(
            ADVERSARIAL / "item09_fake_tinker_backend_packs_a_group_in_a_row.toml"
        )
        root = controlled_copy(root, tmp_path / edit, fake.edits)
    sys.path.insert(0, str(REPROS))
    try:
        train = import_script(REPROS / "_tinker_train.py", "_artbot_test_tinker_train")
        check = import_script(REPROS / "_tinker_check.py", "_artbot_test_tinker_check")
        with open_tree(root, load_catalog(ROOT).audit).modules() as art, train.loaded(art) as svc:
            got, why = check.tinker_pack_results(svc)
    finally:
        sys.path.remove(str(REPROS))
    assert got is packs, why
    assert f"into {rows} through LocalBackend._prepare_training_batch (run)" in why
