"""Items 7, 8 and 801 split (issue #53): each claim's inputs are drawn without ART
(``ORACLES``), ART's path is measured in the check's process, and the verdict is the judge's on
what was taped, the same whether the check's process or the test judges it.

The check runs as artbot runs it with a plan: ``art.plan`` holds ``Oracle.plan`` of two seeds,
on a fake fix and a real fix of each item (adversarial controls of two classes: a fake gated on
the reduction or the row's size, or made in the caller; a fix in a same-file helper or in the
caller), and the tape is judged here with the oracle's judge."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.repro.scripts import import_script
from artbot.verify.tree import open_tree
from tests.helpers.controls import ADVERSARIAL, ROOT, controlled_copy, load_adversarial
from tests.helpers.wheels import ArtWheels

REPROS = ROOT / "repros"
SCRIPTS = {
    "7": "item07_tis_fallback.py",
    "8": "item08_unclamped_exp.py",
    "801": "item801_ppo_sentinel_loss.py",
}
# item: (release, a fake the check must find reproduced, a real fix it must find fixed)
CONTROLS = {
    "7": (
        "0.5.20",
        "item07_fake_skip_only_in_rows_up_to_4096_tokens",
        "item07_real_weight_from_a_same_file_helper",
    ),
    "8": (
        "0.5.20",
        "item08_fake_clamp_only_under_mean_reduction",
        "item08_real_clamp_in_a_same_file_helper",
    ),
    "801": (
        "0.5.23",
        "item801_fake_sentinel_floored_in_the_caller",
        "item801_real_sentinel_as_missing_in_the_caller",
    ),
}


def repro(item: str) -> Any:
    sys.path.insert(0, str(REPROS))
    try:
        return import_script(REPROS / SCRIPTS[item], f"repros_split_under_test_{item}")
    finally:
        sys.path.remove(str(REPROS))


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_the_inputs_are_drawn_without_art_and_cross_as_json(item: str) -> None:
    before = _art_modules()
    script = repro(item)
    (claim,) = script.ORACLES
    oracle = script.ORACLES[claim]
    prop = script.prop
    edges = oracle.edges()
    assert edges == oracle.edges()  # deterministic
    plans = [oracle.plan(random.Random(seed)) for seed in (1, 2)]
    assert _art_modules() == before  # nothing of ART's imported to draw the inputs
    for plan in plans:
        assert plan == json.loads(json.dumps(plan))
        assert len(plan) == len(edges) + oracle.draws == len(edges) + prop.DRAWS[item]
    assert plans[0][: len(edges)] == plans[1][: len(edges)]
    assert plans[0][len(edges) :] != plans[1][len(edges) :]  # artbot's seed adds new inputs
    contract = prop.CONTRACTS[item]
    dims = {
        **prop.path_.CONFIG_VALUES,
        **prop.path_.PATH_VALUES,
        **contract["fixed"],
        **contract["extra"],
    }
    drawn = [c for plan in plans for c in plan[len(edges) :]]
    for key, values in dims.items():
        for case in drawn:
            assert _within(case[key], values), (key, case[key])
    rows = {c["row tokens"] for c in drawn}
    assert rows - set(dims["row tokens"]), "draws reach row sizes the covering array lacks"
    longest = max((prop.path_.ROW_MAX, *prop.LONG_ROWS.get(item, ())))  # item 7: 32,768
    assert max(c["row tokens"] for c in edges) == longest


def _art_modules() -> set[str]:
    return {m for m in sys.modules if m == "art" or m.startswith("art.")}


def _within(value: Any, values: tuple[Any, ...]) -> bool:
    """``value`` one of ``values``, or a number between listed ones of its type and sign."""
    if value in values and type(value) in {type(v) for v in values}:
        return True
    kin = [v for v in values if type(v) is type(value) and not isinstance(v, bool)]
    kin = [v for v in kin if (v < 0) == (value < 0)]
    return bool(kin) and min(kin) <= value <= max(kin)


def test_the_judges_decide_from_raw_values_alone() -> None:
    prop = repro("801").prop
    case = prop.path_.base_case(**{"bad old": -9999.0, "advantage": -1.0})
    step = {"losses": [1.0], "dtype": "float32", "grad_max": 0.5, "token_scales": [0.1]}
    assert prop.judge_sane(case, {"ordinary": step, "bad": step}) is None
    huge = dict(step, losses=[1.6e8], grad_max=0.0)
    assert prop.judge_sane(case, {"ordinary": step, "bad": huge}) is not None
    assert (
        prop.judge_sane(case, {"ordinary": step, "bad": {"error": "ValueError: logprobs"}}) is None
    )
    assert prop.judge_sane(case, {"ordinary": step, "bad": {"error": "ValueError: no"}}) is not None
    nan_grad = dict(step, grad_max=math.nan)
    assert prop.judge_finite(case, {"bad": nan_grad}) is not None
    assert prop.judge_finite(case, {"bad": {"error": "RuntimeError: logprobs"}}) is not None
    tis = {"with": step, "without": step, "grad_diff": 0.0}
    assert prop.judge_tis(case, tis) is None
    assert prop.judge_tis(case, dict(tis, grad_diff=0.1)) is not None
    assert prop.judge_tis(case, {"with": step, "without": step}) is not None  # no diff taped
    for garbled in ({"losses": ["1.0"], "dtype": "float32"}, {"losses": [1.0], "dtype": "os"}):
        with pytest.raises((ValueError, KeyError, TypeError)):
            prop.judge_finite(case, {"bad": garbled})


@pytest.mark.repro
@pytest.mark.parametrize(("item", "version"), [(k, v[0]) for k, v in sorted(CONTROLS.items())])
def test_a_planned_check_is_judged_the_same_from_its_tape(
    item: str, version: str, catalog: Catalog, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    """(``version`` a parameter: make test's slice runs the newest release's case alone.)"""
    script = repro(item)
    (claim,) = script.ORACLES
    oracle = script.ORACLES[claim]
    _, fake, fix = CONTROLS[item]
    for name, expected in ((fake, "reproduced"), (fix, "fixed")):
        control = load_adversarial(ADVERSARIAL / f"{name}.toml")
        root = controlled_copy(art_wheels.tree(version), tmp_path / name, control.edits)
        for seed in (11, 12):
            plan = oracle.plan(random.Random(seed))
            art = open_tree(root, catalog.audit, label=f"{version} + {name}").modules()
            art.plan = {claim: plan}
            with art:
                outcome = script.check_art(art)
            tape = art.tape[claim]
            failures = [e for e in tape if oracle.judge(e["case"], e["raw"]) is not None]
            judged = "reproduced" if failures else "fixed"
            assert judged == expected, (name, seed, failures[-1:] or tape[-1:])
            assert outcome["claims"][claim]["verdict"] is (judged == "reproduced"), name
            measured = [e["case"] for e in tape]
            if judged == "fixed":  # every drawn input measured, in artbot's order
                assert measured == plan
            else:  # artbot's inputs in its order up to the first failing one, then shrunk
                first = tape.index(failures[0])
                assert measured[: first + 1] == plan[: first + 1]
            assert len(json.dumps(tape)) < 2_000 * len(tape)  # a few values per case
