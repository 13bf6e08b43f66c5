"""The split (issue #53) of items 3, 10 and 1001: artbot draws the inputs, the check's process
measures them, and the verdict is what each claim's Oracle judges of the tape, in this process.

For each item, on a fake fix and on a real fix (adversarial controls applied to a release), with
plans drawn from two seeds: the check measures exactly the planned inputs (in order), and the
Oracle's judgement of the tape (a failing entry anywhere: reproduced; else fixed, every planned
input measured) is the control's expected verdict, and the check's own.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import load_catalog
from artbot.verify.tree import open_tree
from tests.helpers.controls import ADVERSARIAL, ROOT, controlled_copy, load_adversarial, repro
from tests.helpers.wheels import ArtWheels

pytestmark = pytest.mark.repro

CONTROLS = {
    3: ("item03_fake_zero_variance_up_to_64", "item03_real_equal_group_test_in_a_same_file_helper"),
    10: ("item10_fake_population_std_up_to_64", "item10_real_rescaled_in_the_caller"),
    1001: ("item1001_fake_relative_guard_up_to_64", "item1001_real_relative_guards_on_both_paths"),
}
SEEDS = (20261206, 53)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True)


def rejudged(oracle: Any, plan: list[Any], tape: list[dict[str, Any]]) -> str:
    """Artbot's verdict of one claim from its tape (issue #53's rule)."""
    if any(oracle.judge(e["case"], e["raw"]) is not None for e in tape):
        return "reproduced"
    measured = {_json(e["case"]) for e in tape}
    assert all(_json(c) in measured for c in plan), "a planned input was not measured"
    return "fixed"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("item", "control"),
    [(item, name) for item, names in CONTROLS.items() for name in names],
)
def test_the_tape_judged_here_gives_the_verdict(
    item: int, control: str, seed: int, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    made = load_adversarial(ADVERSARIAL / f"{control}.toml")
    assert made.expect is not None
    (version,) = made.releases
    root = controlled_copy(art_wheels.tree(version), tmp_path / "copy", made.edits)
    script = repro(item)
    oracles = script.ORACLES
    assert set(oracles) == set(made.expect)
    art = open_tree(root, load_catalog(ROOT).audit, label=control).modules()
    art.plan = {cid: oracle.plan(random.Random(seed)) for cid, oracle in oracles.items()}
    with art:
        result = script.check_art(art)
    for cid, oracle in oracles.items():
        plan, tape = art.plan[cid], art.tape[cid]
        # The planned inputs, in artbot's order, up to the first failure; then the shrinking's.
        fails = [oracle.judge(e["case"], e["raw"]) is not None for e in tape]
        head = fails.index(True) + 1 if any(fails) else len(tape)
        assert [_json(e["case"]) for e in tape[:head]] == [_json(c) for c in plan[:head]], cid
        verdict = rejudged(oracle, plan, tape)
        assert verdict == made.expect[cid], (cid, result["claims"][cid]["detail"])
        assert result["claims"][cid]["verdict"] is (verdict == "reproduced"), cid
        assert result["claims"][cid]["domain"]["seed"] is None  # artbot's, said by artbot
