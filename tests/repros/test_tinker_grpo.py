"""Repros for item 9 (Tinker masks), item 2 (#1109, Unsloth BF16 logsumexp) and item 3 (#1110,
equal-reward groups): each reproduces on the modelled path and not with the fix, and each
quantity matches what the arithmetic implies, worked out here by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from artbot.repro.scripts import import_script
from tests.helpers.forkrun import RunScript

pytestmark = pytest.mark.repro

REPROS = Path(__file__).resolve().parents[2] / "repros"

item09 = import_script(REPROS / "item09_tinker_masks.py")
item02 = import_script(REPROS / "item02_unsloth_logsumexp.py")
item03 = import_script(REPROS / "item03_equal_reward_groups.py")


def span(a: int, b: int) -> list[int]:
    """Positions a..b inclusive."""
    return list(range(a, b + 1))


# --- item 9: Tinker masks ---------------------------------------------------------------
#
# Two-branch row: root 11..14 at 0-3 (group 1, its own parent), branch A 15,21,22,23 at 4-7
# (group 2, parent 1), branch B 15,31,32,33 at 8-11 (group 3, parent 1), padding 12-15 (-1).
TWO_GROUPS = [1] * 4 + [2] * 4 + [3] * 4 + [-1] * 4
TWO_PARENTS = [1] * 12 + [-1] * 4
# Nested row: system 0-2 (g1), prompt 1 rest 3-4 (g2 <- 1), completions 5-7 (g3 <- 2) and
# 8-10 (g4 <- 2), prompt 2 rest 11-12 (g5 <- 1), completions 13-15 (g6 <- 5), 16-18 (g7 <- 5).
NESTED_GROUPS = [1] * 3 + [2] * 2 + [3] * 3 + [4] * 3 + [5] * 2 + [6] * 3 + [7] * 3 + [-1] * 5
NESTED_PARENTS = [1] * 5 + [2] * 6 + [1] * 2 + [5] * 6 + [-1] * 5


@pytest.fixture(scope="module")
def tinker_cited() -> dict:
    return item09.measure()


@pytest.fixture(scope="module")
def tinker_fixed() -> dict:
    return item09.measure(item09.audit_fix_masks, optim_step_per_row=False)


def test_packer_ids_follow_art_convention(tinker_cited: dict) -> None:
    assert tinker_cited["two_branch"]["group_ids"] == TWO_GROUPS
    assert tinker_cited["two_branch"]["parent_ids"] == TWO_PARENTS
    assert tinker_cited["nested"]["group_ids"] == NESTED_GROUPS
    assert tinker_cited["nested"]["parent_ids"] == NESTED_PARENTS


def test_current_masks_leak_siblings_and_root_covers_row(tinker_cited: dict) -> None:
    two = tinker_cited["two_branch"]
    # parent == 1 holds on the root and both branches, so every datum is positions 0-11.
    assert two["datums"] == {-1: span(12, 15), 1: span(0, 11), 2: span(0, 11), 3: span(0, 11)}
    assert two["extra"] == {1: span(4, 11), 2: span(8, 11), 3: span(4, 7)}
    assert two["root_datum_covers_row"] == {1: True}
    assert two["padding_datum"] is True
    # Group 3's datum writes last; B's tokens 9-11 are scored at 8-10 after A's 4-7.
    assert two["wrong_context_tokens"] == 3
    assert two["trainable_tokens"] == 6
    wrong = [s["token"] for s in two["scored"] if not s["correct"]]
    assert wrong == [9, 10, 11]


def test_audit_fix_masks_are_group_and_parent(tinker_fixed: dict) -> None:
    two = tinker_fixed["two_branch"]
    assert two["datums"] == {
        -1: span(12, 15),
        1: span(0, 3),
        2: span(0, 7),
        3: span(0, 3) + span(8, 11),
    }
    assert all(not v for v in two["extra"].values())
    assert two["root_datum_covers_row"] == {1: False}
    assert two["wrong_context_tokens"] == 0


def test_nested_row_needs_every_ancestor(tinker_cited: dict, tinker_fixed: dict) -> None:
    chain = item09.measure(item09.ancestor_masks, optim_step_per_row=False)
    # Completion group 3 (parent 2, grandparent 1): parent == 2 picks groups 3 and 4 only.
    assert tinker_cited["nested"]["datums"][3] == span(5, 10)
    assert tinker_fixed["nested"]["datums"][3] == span(3, 7)  # misses the system prompt 0-2
    assert chain["nested"]["datums"][3] == span(0, 7)
    assert tinker_cited["nested"]["wrong_context_tokens"] == 8
    assert tinker_fixed["nested"]["wrong_context_tokens"] == 8
    assert chain["nested"]["wrong_context_tokens"] == 0
    assert chain["two_branch"]["padding_datum"] is False


@pytest.mark.parametrize("rows", [1, 3, 5])
def test_optimizer_steps_per_art_step(rows: int) -> None:
    per_row = item09.measure(rows_per_step=rows)
    once = item09.measure(rows_per_step=rows, optim_step_per_row=False)
    assert per_row["optimizer_steps"] == rows
    assert once["optimizer_steps"] == 1
    assert per_row["calls"][:2] == ["forward_backward(4 datums)", "optim_step"]


def test_item09_verdicts(tinker_cited: dict, tinker_fixed: dict) -> None:
    assert item09.is_reproduced(tinker_cited) is True
    assert item09.is_reproduced(tinker_fixed) is False
    assert item09.is_reproduced(item09.measure(rows_per_step=1)) is False


# --- item 2: Unsloth BF16 logsumexp ---------------------------------------------------------
#
# At x = 40 the BF16 spacing is 2**(5 - 7) = 0.25. The stored sum S = 1 + r has steps of
# 2**-7; log(1 + 17/128) = 0.1247 stays under 0.125 (so x + it rounds back to 40), while
# log(1 + 18/128) = 0.1316 rounds up to 40.25. S rounds to 1 + 17/128 or below while
# 1 + r < 1 + 17/128 + 2**-8, i.e. p > 256/291. At x = 80 the spacing is 0.5 and the last
# S is 1 + 36/128 (log 0.2478 < 0.25; 1 + 37/128 gives 0.2539), so p > 256/329.
HAND_THRESHOLDS = {40.0: 256 / 291, 80.0: 256 / 329}


@pytest.fixture(scope="module")
def unsloth_cited() -> list[dict]:
    return item02.measure()


@pytest.fixture(scope="module")
def unsloth_fixed() -> list[dict]:
    return item02.measure(item02.calculate_logprobs_fp32, fp32=True)


@pytest.mark.parametrize("x, p", sorted(HAND_THRESHOLDS.items()))
def test_threshold_matches_hand_derivation(x: float, p: float) -> None:
    assert item02.dead_zone_threshold(x) == pytest.approx(p, rel=1e-12)


def test_dead_zone_sits_where_bf16_spacing_puts_it(unsloth_cited: list[dict]) -> None:
    for r in unsloth_cited:
        x = r["target_logit"]
        spacing = 2.0 ** (math.floor(math.log2(x)) - 7)
        assert r["first_order_threshold"] == pytest.approx(math.exp(-spacing / 2))
        # The sum's 2**-7 step can only lower the threshold, by less than one such step in S.
        assert r["derived_threshold"] <= r["first_order_threshold"]
        assert 1 / r["derived_threshold"] - 1 / r["first_order_threshold"] < 2.0**-7
        assert r["highest_p_with_nonzero_logprob"] < r["derived_threshold"]
        assert r["derived_threshold"] <= r["lowest_p_with_zero_logprob"]
        assert r["rows_disagreeing_with_derivation"] == 0
        assert r["rows_judged"] > 0.99 * r["rows"]
        assert r["zero_grad_iff_zero_logprob"]
        assert r["logsumexp_is_bf16_composite"]
        # Rounding x + log S costs up to half the spacing, storing S up to 2**-8 in log S,
        # and the stored exps and log S a little more; 2**-7 covers the last two.
        assert r["max_abs_error_vs_float64"] <= spacing / 2 + 2.0**-7
    at_40 = next(r for r in unsloth_cited if r["target_logit"] == 40.0)
    assert 0.875 < at_40["lowest_p_with_zero_logprob"] < 0.885  # the audit's "about 0.88"


def test_fp32_logsumexp_has_no_dead_zone_in_sweep(unsloth_fixed: list[dict]) -> None:
    for r in unsloth_fixed:
        assert r["zero_logprob_rows"] == 0
        assert r["rows_disagreeing_with_derivation"] == 0
        assert r["max_abs_error_vs_float64"] < 1e-5


def test_item02_verdicts(unsloth_cited: list[dict], unsloth_fixed: list[dict]) -> None:
    assert item02.is_reproduced(unsloth_cited) is True
    assert item02.is_reproduced(unsloth_fixed) is False


def test_single_row_zero_logprob_and_gradient() -> None:
    # Target 40 and one competitor at 36: p = 1 / (1 + e^-4) = 0.982, deep in the dead zone.
    logits = torch.full((1, 1, item02.VOCAB), -30.0)
    logits[0, 0, 0], logits[0, 0, 1] = 40.0, 36.0
    hidden = logits.to(torch.bfloat16).requires_grad_(True)
    out, _ = item02.calculate_logprobs_bf16(
        torch.eye(item02.VOCAB), hidden, torch.zeros((1, 1), dtype=torch.long), 1
    )
    out.float().sum().backward()
    assert float(out.detach()) == 0.0
    grad = hidden.grad
    assert grad is not None
    assert float(grad[0, 0, 0]) == 0.0
    assert float(grad[0, 0, 1]) < 0  # the competitor still gets its -p_j


# --- item 3: equal-reward groups ------------------------------------------------------------


def test_equal_reward_residue_is_one_ulp() -> None:
    # 0.1 lies in [2**-4, 2**-3): one ulp is 2**-56; the mean of 8 x 0.1 is one ulp low.
    # 0.7 lies in [0.5, 1): one ulp is 2**-53; the mean of 8 x 0.7 is one ulp high.
    up = 2.0**-56 / (2.0**-56 + 1e-6)
    down = -(2.0**-53) / (2.0**-53 + 1e-6)
    assert item03.grpo_advantages([0.1] * 8) == [up] * 8
    assert item03.grpo_advantages([0.7] * 8) == [down] * 8
    assert item03.grpo_advantages([1.0] * 8) == [None] * 8  # exact mean: dropped
    assert item03.grpo_advantages_fixed([0.1] * 8) == [None] * 8


def test_residue_table_facts() -> None:
    table = item03.residue_table()
    assert table[2] == []  # r + r and / 2 are exact in binary
    assert 0.1 in table[3]  # 0.1 + 0.1 + 0.1 = 0.30000000000000004


@pytest.fixture(scope="module")
def grpo_cited() -> dict:
    return item03.measure()


@pytest.fixture(scope="module")
def grpo_fixed() -> dict:
    return item03.measure(item03.grpo_advantages_fixed, item03.fixed_pack)


def test_equal_group_trains_at_full_scale(grpo_cited: dict, grpo_fixed: dict) -> None:
    g = grpo_cited["full_scale"]["equal_group"]
    # Only the 0.1 group is left; one advantage a on every token, weights averaging 1, so
    # a / mean(|a| w) = sign(a) = +1 on all 3+5+8+4+6+7+5+9 = 47 tokens.
    assert g["tokens"] == sum(item03.COMPLETION_LENS) == 47
    assert g["min"] == pytest.approx(1.0, abs=1e-6)
    assert g["max"] == pytest.approx(1.0, abs=1e-6)
    assert grpo_fixed["full_scale"]["trained"] is False


def test_equal_group_dilutes_a_real_group(grpo_cited: dict, grpo_fixed: dict) -> None:
    # 94 tokens, 16 results of weight 1/n: mean weight 16/94. The 0/1 group's |a| = 1 / (1 + 2e-6)
    # on 8 results gives mean(|A| w) = |a| / 2, so its tokens get +-2; alone, +-1.
    a = 0.5 / (0.5 + 1e-6)
    spread = grpo_cited["mixed"]["spread_group"]
    assert spread["max"] == pytest.approx(2.0, rel=1e-6) and spread["min"] == -spread["max"]
    assert grpo_cited["mixed"]["equal_group"]["max"] == pytest.approx(
        2.0 * (2.0**-56 / (2.0**-56 + 1e-6)) / a, rel=1e-5
    )
    assert grpo_fixed["mixed"]["spread_group"]["max"] == pytest.approx(1.0, rel=1e-6)
    assert grpo_fixed["mixed"]["equal_group"]["tokens"] == 0


def test_nan_cases(grpo_cited: dict, grpo_fixed: dict) -> None:
    assert (
        grpo_cited["nan_balance"]["nan_tokens"]
        == 47
        == grpo_cited["nan_balance"]["assistant_tokens"]
    )
    assert grpo_fixed["nan_balance"]["nan_tokens"] == 0
    # -inf - -inf is NaN, not 0, so the group survives and the normalizer is NaN for all
    # 4 x (3+5+8+4) = 40 tokens of both groups.
    assert grpo_cited["neg_inf"]["nan_tokens"] == 40
    assert grpo_fixed["neg_inf"]["nan_tokens"] == 0
    assert item03.zero_variance_0521([-math.inf] * 4) is False
    assert item03.zero_variance([-math.inf] * 4) is True


def test_normalize_pack_zero_over_zero() -> None:
    mask = torch.tensor([[False, True, True]])
    zeros = torch.zeros((1, 3))
    weights = torch.ones((1, 3))
    adv, _ = item03.normalize_pack(zeros.clone(), weights.clone(), mask)
    assert torch.isnan(adv[mask]).all()
    adv, _ = item03.normalize_pack(zeros.clone(), weights.clone(), mask, guard_zero_mean=True)
    assert torch.equal(adv, zeros)


def test_item03_verdicts(grpo_cited: dict, grpo_fixed: dict) -> None:
    assert item03.is_reproduced(grpo_cited) is True
    assert item03.is_reproduced(grpo_fixed) is False


# --- the scripts as a maintainer runs them --------------------------------------------------


@pytest.mark.parametrize(
    "script, item",
    [
        ("item09_tinker_masks.py", "9"),
        ("item02_unsloth_logsumexp.py", "2"),
        ("item03_equal_reward_groups.py", "3"),
    ],
)
def test_script_json(script: str, item: str, tmp_path: Path, run_script: RunScript) -> None:
    proc = run_script(REPROS / script, "--json", cwd=tmp_path)  # any working directory
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["item"] == item
    assert report["verdict"] == "reproduced"
    assert report["measurements"]
