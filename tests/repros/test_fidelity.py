"""Issue #11's checks on items 4, 5, 6, 9, 10, 11: each verdict fails on the fixed form, and the
settings the scripts state are the ones they run."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

from artbot.verify.code import load_repro  # noqa: E402

pytestmark = pytest.mark.repro

REPROS = Path(__file__).resolve().parents[2] / "repros"


def _repro(stem: str) -> ModuleType:
    return load_repro(next(REPROS.glob(f"{stem}_*.py")))


@pytest.fixture(autouse=True, scope="module")
def _two_threads():
    previous = torch.get_num_threads()
    torch.set_num_threads(min(2, previous))
    yield
    torch.set_num_threads(previous)


def test_item04_candidate_entropy_is_calibrated_to_the_stated_value() -> None:
    item04 = _repro("item04")
    gen = torch.Generator().manual_seed(3)
    steps = -torch.log(torch.rand(200, item04.CANDIDATES - 1, generator=gen))
    gaps = torch.cat([torch.zeros(200, 1), steps.cumsum(dim=1)], dim=1)
    spread = torch.exp(torch.randn(200, generator=gen))
    s0 = item04.calibrate_scale(gaps, spread, 0.6)
    assert float(item04._entropy(gaps, s0 * spread).mean()) == pytest.approx(0.6, abs=1e-6)


def test_item06_lora_parameter_count_is_derived_from_qwen3_4b() -> None:
    item06 = _repro("item06")
    # Per layer, rank r: q 2560->4096, k and v 2560->1024, o 4096->2560, gate and up
    # 2560->9728, down 9728->2560; r * (in + out) each.
    per_layer = (2560 + 4096) + 2 * (2560 + 1024) + (4096 + 2560) + 3 * (2560 + 9728)
    assert item06.PER_LAYER_IN_PLUS_OUT == per_layer == 57_344
    assert item06.LORA_PARAMETERS == 36 * 8 * per_layer == 16_515_072


def test_item06_rule_damps_g_at_or_below_eps_and_not_with_the_fix() -> None:
    item06 = _repro("item06")
    # g / (|g| + eps): 1/2 at |g| = eps, about 1 well above it; with eps 1e-13 about 1 throughout.
    cited = item06.first_step(item06.EPS_TRAINER_RANK, (1e-6, 1e-8, 1e-10))
    assert cited == pytest.approx([1e-6 / (1e-6 + 1e-8), 0.5, 1e-10 / (1e-10 + 1e-8)], rel=1e-3)
    fixed = item06.first_step(item06.EPS_MEGATRON, (1e-6, 1e-8, 1e-10))
    assert min(fixed) > 0.99


def test_item09_fixed_masks_are_not_reproduced_and_the_trigger_is_64_tokens() -> None:
    item09 = _repro("item09")
    cited = item09.measure()
    assert item09.is_reproduced(cited)
    fixed = item09.measure(item09.audit_fix_masks, optim_step_per_row=False)
    assert not item09.is_reproduced(fixed)
    # The Tinker path shares a prefix only when the shareable prompt (one token short of the
    # prompt) is at least min_shared_segment_length = 64 tokens.
    shared = {int(n): t["shared_segment"] for n, t in cited["trigger"].items()}
    assert shared == {16: False, 64: False, 65: True, 128: True}
    for n, t in cited["trigger"].items():
        assert (t["wrong_context_tokens"] > 0) == shared[int(n)]
        assert fixed["trigger"][n]["wrong_context_tokens"] == 0


def test_item09_min_length_model_shares_exactly_at_the_threshold() -> None:
    item09 = _repro("item09")
    seqs = [torch.arange(10), torch.cat([torch.arange(9), torch.tensor([99])])]
    for min_len, shared in ((9, True), (10, False)):
        row = item09.prefix_tree_pack(seqs, max_depth=4, min_shared_segment_length=min_len)
        roots = int((row.group_ids == row.parent_ids).sum())
        # Shared: one root segment of 9 tokens; not shared: both sequences whole, as roots.
        assert (roots == 9) == shared and (roots == 20) == (not shared)


def test_item10_equal_fp32_rewards_get_an_advantage_and_the_fix_gives_none() -> None:
    item10 = _repro("item10")
    cited = item10.measure_equal_groups(item10.compute_advantages)
    by_group = {(g["rewards"][0], len(g["rewards"])): g["advantages"] for g in cited}
    assert by_group[(0.22, 3)] == pytest.approx([math.sqrt(2 / 3)] * 3, abs=1e-6)
    assert by_group[(0.15, 8)] == pytest.approx([math.sqrt(7 / 8)] * 8, abs=1e-6)
    fixed = item10.measure_equal_groups(item10.compute_advantages_fixed)
    assert item10.max_equal_group_advantage(fixed) == 0.0
    assert not item10.is_reproduced(item10.measure(item10.compute_advantages_fixed))


def test_item11_one_step_logprob_change_is_lost_in_bf16_and_kept_in_fp32() -> None:
    item11 = _repro("item11")
    cited, fixed = item11.one_step(fixed=False), item11.one_step(fixed=True)
    first = cited["rows"][0]
    assert first["delta_rms_over_base_rms"] < 2.0**-9  # below half an ulp, early in training
    assert first["change_lost"] > 0.5
    # The loss shrinks as the delta grows past half an ulp.
    lost = [r["change_lost"] for r in cited["rows"]]
    assert lost[0] > lost[1] > lost[2] and abs(lost[-1]) < 0.01
    assert all(r["change_lost"] == 0.0 for r in fixed["rows"])
    assert not item11.is_reproduced({"one_step": fixed})
