"""Items 1, 5 and 11 split (issue #53): each check measures the inputs artbot drew and tapes
them; the verdict comes from the repro's ART-free judge, re-run here on the tape (after a JSON
round trip), outside the code that measured it.

Each check runs with a plan from two seeds on a fake fix (a gate on a config value or a mode)
and on a real fix written another way (in the caller, through ``torch.promote_types``, through
an alias): the plan is measured whole and in order, the judge re-run here finds the fake
reproduced and the fix fixed, and agrees with ``check_art``'s own verdict.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from artbot.verify.isolation import ArtModules
from tests.helpers.controls import ADVERSARIAL, controlled_copy, load_adversarial, repro
from tests.helpers.wheels import ArtWheels

pytestmark = pytest.mark.repro

NEWEST = "0.5.23"
SEEDS = (11, 2026)
# make test runs the first seed; make test-all both.
SEED_PARAMS = [SEEDS[0], *(pytest.param(s, marks=pytest.mark.full) for s in SEEDS[1:])]
# item -> (a fake that must stay reproduced, a real fix that must come out fixed)
CONTROLS = {
    1: ("item01_fake_patch_gated_on_an_env_flag", "item01_real_patch_called_through_an_alias"),
    5: (
        "item05_fake_fp32_leaves_below_rank_16",
        "item05_real_fp32_leaves_from_the_caller_by_promote_types",
    ),
    11: ("item11_fake_fp32_add_in_eval_only", "item11_real_promote_types_in_the_shared_fc1"),
}


def rejudge(oracles: dict[str, Any], plan: dict[str, list[Any]], tape: dict[str, Any]) -> dict:
    """artbot's side, as issue #53 states it: a failure on any taped entry is "reproduced";
    "fixed" needs every planned input measured and every entry passing."""
    out = {}
    for cid, oracle in oracles.items():
        entries = json.loads(json.dumps(tape.get(cid, [])))
        failed = [e for e in entries if oracle.judge(e["case"], e["raw"]) is not None]
        measured = [e["case"] for e in entries]
        if failed:
            out[cid] = "reproduced"
        elif all(case in measured for case in plan[cid]):
            out[cid] = "fixed"
        else:
            out[cid] = "not measured"
    return out


def run_planned(item: int, tree: Path, seed: int) -> tuple[dict, dict, dict]:
    """``check_art`` on ``tree`` with the plan artbot would draw with ``seed``: its claims, the
    plan and the tape."""
    module = repro(item)
    plan = {cid: o.plan(random.Random(seed)) for cid, o in module.ORACLES.items()}
    with ArtModules(tree / "art") as art:
        art.plan = plan
        result = module.check_art(art)
        tape = art.tape
    return result["claims"], plan, tape


@pytest.mark.parametrize("item", sorted(CONTROLS))
def test_the_oracles_plan_without_art(item: int) -> None:
    """The plan is a value computed from the repro alone: deterministic edges, seeded draws,
    JSON values; two seeds differ only in their draws."""
    for cid, oracle in repro(item).ORACLES.items():
        first, second = (oracle.plan(random.Random(s)) for s in SEEDS)
        assert first == json.loads(json.dumps(first)), cid
        edges = len(oracle.edges()) if oracle.edges else 0
        assert first[:edges] == second[:edges] and len(first) == edges + oracle.draws


@pytest.mark.parametrize("seed", SEED_PARAMS)
@pytest.mark.parametrize("item", sorted(CONTROLS))
def test_a_planned_check_is_judged_again_from_its_tape(
    item: int, seed: int, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    release = art_wheels.tree(NEWEST)
    module = repro(item)
    for kind, stem in zip(("reproduced", "fixed"), CONTROLS[item], strict=True):
        control = load_adversarial(ADVERSARIAL / f"{stem}.toml")
        tree = controlled_copy(release, tmp_path / stem, control.edits)
        claims, plan, tape = run_planned(item, tree, seed)
        judged = rejudge(module.ORACLES, plan, tape)
        assert judged == dict.fromkeys(module.ORACLES, kind), (stem, judged)
        for cid, claim in claims.items():
            assert claim["verdict"] is (kind == "reproduced"), (stem, claim["detail"])
            if kind == "fixed":  # every planned input measured, in artbot's order
                assert [e["case"] for e in tape[cid]] == plan[cid], stem
