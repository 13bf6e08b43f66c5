"""Item 6's split (issue #53): ``check_art`` measures exactly the inputs artbot drew for each
claim (its plan, from ``ORACLES``) and tapes what ART's step did; each claim's judge, run again
on the tape after a JSON round trip as artbot runs it in its own process, gives the verdict
``check_art`` gave. And the judges are ART-free: their module imports neither ART nor torch."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from artbot.repro.scripts import import_script
from artbot.verify.isolation import ArtModules
from tests.helpers.controls import ROOT, controlled_copy, load_control, repro
from tests.helpers.wheels import ArtWheels

RELEASE = "0.5.23"


def _checked(root: Path, plan: dict[str, list[Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    item06 = repro(6)
    with ArtModules(root / "art") as art:
        art.plan = plan
        out = item06.check_art(art)
    return out, json.loads(json.dumps(art.tape))


@pytest.mark.repro
@pytest.mark.parametrize("fixed", [False, True], ids=["release", "fixed"])
def test_check_art_measures_the_plan_of_two_seeds_and_the_judge_agrees(
    fixed: bool, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    item06 = repro(6)
    release = art_wheels.tree(RELEASE)
    control = load_control(6)
    assert control is not None
    root = (
        controlled_copy(release, tmp_path / "fix", control.edits("fix", RELEASE))
        if fixed
        else release
    )
    plans = []
    for seed in (1, 2):
        plan = {cid: o.plan(random.Random(seed)) for cid, o in item06.ORACLES.items()}
        out, tape = _checked(root, plan)
        for cid, oracle in item06.ORACLES.items():
            entries = tape[cid]
            judged = [oracle.judge(e["case"], e["raw"]) for e in entries]
            reproduced = any(f is not None for f in judged)
            assert out["claims"][cid]["verdict"] is reproduced, (cid, judged)
            assert reproduced is not fixed, (cid, out["claims"][cid]["detail"])
            measured = [e["case"] for e in entries]
            if fixed:  # every drawn input measured, in artbot's order, and nothing else
                assert measured == plan[cid]
            else:  # artbot's inputs up to the first failure, then the shrinking's
                first = next(i for i, f in enumerate(judged) if f is not None)
                assert measured[: first + 1] == plan[cid][: first + 1]
            for entry in entries:  # raw outputs are small: numbers, never tensors
                assert len(json.dumps(entry["raw"])) < 4000
        plans.append(plan)
    drawn = [p[item06.CONFIG][len(item06.ORACLES[item06.CONFIG].edges()) :] for p in plans]
    assert drawn[0] != drawn[1], "the two seeds drew the same inputs"


def test_the_judges_import_neither_art_nor_torch() -> None:
    code = (
        "import sys; sys.path.insert(0, 'repros'); import _adam_eps_oracle as o; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'art')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout


def test_the_judges_decide_from_numbers_alone() -> None:
    """A step that used eps 1e-8 where 1e-13 was set is a failure; one that used it, with the
    guard refusing, is not; a LoRA update at 0.42 of the update eps 1e-13 gives is damped."""
    o = import_script(ROOT / "repros" / "_adam_eps_oracle.py", "repros_adam_eps_oracle_under_test")
    case = o.config_edges()[0]
    reached = {"first": [1e-13, 1e-13], "first_other": [1e-6, 1e-6], "later": [], "guard": True}
    missed = {"first": [1e-8, 1e-8], "first_other": [1e-8, 1e-8], "later": [], "guard": True}
    assert o.judge_config(case, {"fields": {"eps": reached}, "default": [1e-8]}) is None
    failure = o.judge_config(case, {"fields": {"eps": missed}, "default": [1e-8]})
    assert failure is not None and failure.bound == "eps 1e-13"
    unguarded = {"fields": {"eps": {**reached, "guard": False}}, "default": [1e-8]}
    assert o.judge_config(case, unguarded) is not None
    betas = [0.9, 0.99]
    full = o.megatron_update(0.9, 0.99, 2, 1e-8)
    assert 0.74 < full < 0.75  # sqrt(1.99) / 1.9: eps 1e-13 hardly damps a gradient of 1e-8
    given = {"eps": 1e-13, "step": 2, "update_a_over_lr": full, "betas": betas}
    assert o.judge_damping({}, {**given, "grad_a_median": 1e-8}) is None
    damped = {**given, "eps": 1e-8, "update_a_over_lr": 0.42 * full, "grad_a_median": 1e-8}
    assert o.judge_damping({}, damped) is not None
