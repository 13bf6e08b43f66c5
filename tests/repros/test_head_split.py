"""Items 2, 4 and 401's checks split (issue #53): ART runs in the check's process and returns
numbers (``measure``); each claim's ``ORACLES`` judge decides, ART-free, in artbot's.

For each item, on a fake fix and on a real fix of openpipe-art 0.5.23, ``check_art`` is run
with a plan artbot would draw (``Oracle.plan`` with two seeds): exactly the planned inputs are
measured, and the tape, judged again here with the judge alone, gives the check's verdict. A
check whose own judge was rewritten to pass everything (what a patch under test can do in that
process) still leaves a tape that this process judges reproduced on the fake.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import pytest

from artbot.records.catalog import Catalog, load_catalog
from artbot.verify.code import load_repro
from artbot.verify.tree import open_tree
from tests.helpers.controls import (
    ADVERSARIAL,
    ROOT,
    controlled_copy,
    load_adversarial,
    load_control,
)
from tests.helpers.wheels import ArtWheels

VERSION = "0.5.23"
SEEDS = (1, 2)
SCRIPTS = {
    2: "item02_unsloth_logsumexp.py",
    4: "item04_bf16_lm_head.py",
    401: "item401_unsloth_bf16_logits.py",
}
# Where each check's process finds its judge (the helper module each item script imports).
JUDGES = {"_art_head": "judge", "_art_lse": "judge", "_art_logprobs": "logits_judge"}
# (item, tree): a fake of each class the checks were fooled by before (a size past the old
# domain, a gate on the input's magnitude, a gate on the chunk) and a real fix (0.5.23 as
# shipped for item 2; the audit's fix for item 4; a same-file helper for item 401).
TREES = {
    (2, "fake"): "item02_fake_bf16_logits_for_long_vocab",
    (2, "fix"): None,
    (4, "fake"): "item04_fake_fp32_only_small_chunks",
    (4, "fix"): "fix",
    (401, "fake"): "item401_fake_fp32_only_small_activations",
    (401, "fix"): "item401_real_fp32_matmul_in_a_same_file_helper",
}


_VERDICTS = {True: "reproduced", False: "fixed"}  # check_art's claim verdicts


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog(ROOT)


def _tree(art_wheels: ArtWheels, item: int, kind: str, tmp: Path) -> Path:
    release = art_wheels.tree(VERSION)
    control = TREES[(item, kind)]
    if control is None:
        return release
    if control == "fix":
        found = load_control(item)
        assert found is not None
        return controlled_copy(release, tmp / "fix", found.edits("fix", VERSION))
    adversarial = load_adversarial(ADVERSARIAL / f"{control}.toml")
    return controlled_copy(release, tmp / control, list(adversarial.edits))


def _run(
    catalog: Catalog, root: Path, item: int, plan: dict[str, list[Any]], *, own_judge: Any = None
) -> tuple[Any, dict[str, list[dict[str, Any]]]]:
    """``check_art`` on the tree with artbot's ``plan``, as artbot's check process runs it; its
    result and the tape. ``own_judge`` replaces the judge the check's process uses."""
    repro = load_repro(ROOT / "repros" / SCRIPTS[item])
    if own_judge is not None:
        for helper, name in JUDGES.items():
            if hasattr(repro, helper):
                setattr(getattr(repro, helper), name, own_judge)
    art = open_tree(root, catalog.audit, label=f"{VERSION} {root.name}").modules()
    art.plan = plan
    with art, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = repro.check_art(art)
    return outcome, art.tape


def _judged(oracles: dict[str, Any], tape: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Each claim's verdict from the tape, judged here (artbot's rule): a failure anywhere is
    reproduced."""
    return {
        cid: "reproduced"
        if any(oracles[cid].judge(e["case"], e["raw"]) is not None for e in tape[cid])
        else "fixed"
        for cid in oracles
    }


@pytest.mark.repro
@pytest.mark.parametrize("kind", ["fake", "fix"])
@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_the_planned_inputs_are_measured_and_the_tape_judged_here_gives_the_verdict(
    item: int, kind: str, catalog: Catalog, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    oracles = load_repro(ROOT / "repros" / SCRIPTS[item]).ORACLES
    root = _tree(art_wheels, item, kind, tmp_path)
    plans = []
    for seed in SEEDS:
        plan = {cid: o.plan(random.Random(seed)) for cid, o in oracles.items()}
        plans.append(plan)
        outcome, tape = _run(catalog, root, item, plan)
        for cid, cases in plan.items():
            measured = [e["case"] for e in tape[cid]]
            judge = oracles[cid].judge
            failing = [i for i, e in enumerate(tape[cid]) if judge(e["case"], e["raw"])]
            # Artbot's inputs in its order, up to the first failure (then its shrinking).
            upto = failing[0] + 1 if failing else len(cases)
            assert measured[:upto] == cases[:upto]
            assert failing or measured == cases
        judged = _judged(oracles, tape)
        said = {cid: _VERDICTS[c["verdict"]] for cid, c in outcome["claims"].items()}
        assert judged == said, (seed, outcome["detail"])
        expected = "reproduced" if kind == "fake" else "fixed"
        assert set(judged.values()) == {expected}, (seed, outcome["detail"])
    # The two seeds draw different inputs past the edges.
    assert plans[0] != plans[1]


@pytest.mark.repro
@pytest.mark.parametrize("item", sorted(SCRIPTS))
def test_a_judge_rewritten_in_the_checks_process_does_not_decide(
    item: int, catalog: Catalog, art_wheels: ArtWheels, tmp_path: Path
) -> None:
    oracles = load_repro(ROOT / "repros" / SCRIPTS[item]).ORACLES
    root = _tree(art_wheels, item, "fake", tmp_path)
    plan = {cid: o.plan(random.Random(SEEDS[0])) for cid, o in oracles.items()}
    outcome, tape = _run(catalog, root, item, plan, own_judge=lambda case, raw: None)
    # The check's process, its judge rewritten, says fixed; the numbers it taped do not.
    assert {_VERDICTS[c["verdict"]] for c in outcome["claims"].values()} == {"fixed"}
    assert all(len(tape[cid]) == len(plan[cid]) for cid in plan)
    assert set(_judged(oracles, tape).values()) == {"reproduced"}
