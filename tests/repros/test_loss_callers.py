"""Items 7, 8 and 801 enter through ART's callers of ``loss_fn`` (``repros/_loss_callers.py``,
issue #50): the covering array gives every caller every value, and the callers that run are
ART's own modules, run whole: Unsloth's ``compute_loss`` and Tinker's ``TinkerService.train``
give the same losses and gradients for the same step (both reduce by the mean of FP32
logprobs of one model), and Megatron's call at ``loss_fn`` sums what they average."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from artbot.records.catalog import load_catalog
from artbot.verify.tree import open_tree
from tests.helpers.wheels import ArtWheels

REPROS = Path(__file__).resolve().parents[2] / "repros"


@pytest.fixture(scope="module")
def path_() -> Any:
    sys.path.insert(0, str(REPROS))
    try:
        import _loss_path
        import _ppo_property

        return _loss_path, _ppo_property
    finally:
        sys.path.remove(str(REPROS))


@pytest.mark.parametrize("item", ["7", "8", "801"])
def test_the_edges_give_every_caller_every_value(path_: Any, item: str) -> None:
    loss_path, prop = path_
    contract = prop.CONTRACTS[item]
    dims = {**loss_path.CONFIG_VALUES, **loss_path.PATH_VALUES}
    dims.update(contract["fixed"])
    dims.update(contract["extra"])
    edges = loss_path.cases(contract["fixed"], contract["extra"])
    for caller in dims["caller"]:
        mine = [c for c in edges if c["caller"] == caller]
        for key, values in dims.items():
            for value in values if key != "caller" else ():
                assert any(c[key] == value and type(c[key]) is type(value) for c in mine), (
                    caller,
                    key,
                    value,
                )
    # one long Unsloth row (its attention bias is rows x rows), the last edge
    long = [c for c in edges if c["caller"] == "unsloth" and c["row tokens"] > 1024]
    assert long == [edges[-1]] and long[0]["row tokens"] == loss_path.ROW_MAX


@pytest.mark.repro
def test_unsloth_and_tinker_run_arts_callers_and_agree(path_: Any, art_wheels: ArtWheels) -> None:
    loss_path, _ = path_
    catalog = load_catalog(REPROS.parent)
    art = open_tree(art_wheels.tree("0.5.23"), catalog.audit, label="0.5.23").modules()
    with art, loss_path.callers_.loaded(art) as callers:
        path = loss_path.Path.load(art, callers)
        case = loss_path.base_case(**{"row tokens": 64, "branches": 2})
        steps = {
            caller: loss_path.run_step(path, dict(case, caller=caller), strict=True)
            for caller in ("unsloth", "tinker", "megatron")
        }
        # Tinker's service made one forward_backward and one optimizer step a packed row
        rows = len(steps["tinker"].losses)
        assert callers.client.calls == ["forward_backward(1 datums)", "optim_step"] * rows
        said = callers.whole.said()
    unsloth, tinker, megatron = steps["unsloth"], steps["tinker"], steps["megatron"]
    assert unsloth.dtype == tinker.dtype == torch.float32
    assert unsloth.losses == pytest.approx(tinker.losses, rel=1e-6)
    assert torch.allclose(unsloth.grad, tinker.grad, rtol=1e-5, atol=1e-8)
    # Megatron's reduction="sum": the same per-token terms, summed, not averaged
    assert abs(megatron.losses[0]) > abs(unsloth.losses[0])
    assert any("trl" in s for s in said)  # Unsloth's trainer stack was stood in for
