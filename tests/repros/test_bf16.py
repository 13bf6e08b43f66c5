"""The BF16 reproductions (items 4, 5, 11 and 1/#1108), checked against BF16 arithmetic.

Each repro must report the finding on the modelled ART path and not with the suggested fix, and
what it measures must agree with what BF16's 8 significant bits imply, worked out here
independently of the script's own figures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from artbot.repro.scripts import import_script

if TYPE_CHECKING:
    from torch import Tensor

pytestmark = pytest.mark.repro

torch = pytest.importorskip("torch")

REPROS = Path(__file__).resolve().parents[2] / "repros"


def _load(name: str) -> ModuleType:
    return import_script(REPROS / f"{name}.py", f"repro_{name}")


def _bf16_half_gap(base: Tensor, toward_zero: Tensor) -> Tensor:
    """Half the distance from BF16 ``base`` to its neighbour, away from or toward zero."""
    mag = base.double().abs()
    exponent = torch.floor(torch.log2(mag))
    spacing = torch.exp2(exponent - 7)  # 8 significant bits
    # Below a power of two the next value down is in the binade under it: half the spacing.
    spacing = torch.where(toward_zero & (mag == torch.exp2(exponent)), spacing / 2, spacing)
    return spacing / 2


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # As the scripts run (_common.run: one thread): thousands of small ops are several times
    # faster on one thread than on two that wait on each other on a busy 2-core machine.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


# Item 4 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item04():
    return _load("item04_bf16_lm_head")


@pytest.fixture(scope="module")
def item04_result(item04):
    # The script's 294 tokens and both tail heads run in the captured-output test.
    return item04.measure(tokens=128, tail_masses=(item04.TAIL_MASS,))


def test_item04_reproduced_with_bf16_logits_and_not_with_fp32(item04, item04_result):
    assert item04.is_reproduced(item04_result["cited"])
    assert item04.is_reproduced(item04_result["tails"][item04.TAIL_MASS]["cited"])
    # The FP32-output head (the suggested fix) is an FP32 reference: its error is ~0.
    assert item04_result["fixed"]["logprob_error"]["p99"] < 1e-4
    assert not item04.is_reproduced(item04_result["fixed"])


@pytest.mark.parametrize(
    ("p90", "p99", "holds"),
    [
        (0.075, 0.13, True),  # the audit's own figures
        (0.04, 0.07, True),
        (0.0075, 0.013, False),  # BF16-sized noise ten times smaller than claimed
        (0.075, 0.5, False),
        (1e-6, 1e-6, False),  # an FP32 head
    ],
)
def test_item04_threshold_tests_the_claimed_size(item04, p90, p99, holds):
    assert item04.is_reproduced({"logprob_error": {"p90": p90, "p99": p99}}) is holds


def test_item04_tail_head_has_its_tail_at_the_same_entropy(item04, item04_result):
    tail = item04_result["tails"][item04.TAIL_MASS]
    assert tail["entropy_mean"] == pytest.approx(item04.TARGET_ENTROPY, abs=0.02)
    # Up to m sits outside the top 32 (some tail ids outrank a token's weakest candidates).
    assert 0.5 * item04.TAIL_MASS < tail["tail_mass_max"] <= item04.TAIL_MASS * (1 + 1e-6)
    assert item04_result["tail_mass_max"] < 1e-6
    # The gradient over the top ids leaves out a bounded, small part.
    assert tail["grad_ref_left_out"] < 0.05 and tail["cited"]["grad_change_left_out"] < 0.05
    assert item04_result["grad_ref_left_out"] < 1e-6


def test_item04_estimates_carry_their_standard_errors(item04_result):
    cited = item04_result["cited"]
    for q in ("p50", "p90", "p99"):
        est = cited["logprob_error_est"][q]
        assert est.value == pytest.approx(cited["logprob_error"][q])
        assert 0 < est.stderr < est.value
    assert cited["grad_rel_l2_est"].value == pytest.approx(cited["grad_rel_l2"])
    assert 0 < cited["grad_rel_l2_est"].stderr < 0.5 * cited["grad_rel_l2"]


def test_item04_setting_is_a_language_models_and_errors_are_binned(item04_result):
    # Calibrated to 0.6 nats over the candidates; the full vocabulary adds almost nothing.
    assert 0.4 <= item04_result["entropy_mean"] <= 0.9
    assert item04_result["tail_mass_max"] < 1e-6
    bins = item04_result["cited"]["by_p_target"]
    assert sum(b["tokens"] for b in bins.values()) == 128
    # Confident tokens carry the smallest errors: (1 - p_t) d_t - sum_j p_j d_j.
    assert bins["0.99-1"]["p90"] < bins["0-0.5"]["p90"]


def test_item04_logits_sit_where_bf16_spacing_is_a_quarter(item04):
    weight, hidden, _ = item04.make_head(0, tokens=32)
    # BF16 hidden rows move each logit by ~2**-9 relative: the top stays in [32, 64).
    logits = hidden @ weight.T
    top = logits.max(dim=-1).values
    assert float(top.min()) >= 32.0 and float(top.max()) < 64.0
    rounding = (logits.bfloat16().float() - logits).abs()
    in_binade = (logits.abs() >= 32) & (logits.abs() < 64)
    # Spacing 2**(5-7) = 0.25 in [32, 64): a logit moves by at most 0.125, and some nearly do.
    assert float(rounding[in_binade].max()) <= 0.125
    assert float(rounding[in_binade].max()) > 0.1
    assert float(rounding.max()) <= 0.125


def test_item04_logprob_error_within_the_rounding_bound(item04_result):
    cited, fixed = item04_result["cited"], item04_result["fixed"]
    # log p_t = x_t - lse(x): x_t moves by <= 0.125 and lse by a weighted mean of the moves.
    assert cited["logprob_error_max"] <= 0.25 + 1e-5
    assert cited["logprob_error"]["p99"] > 100 * fixed["logprob_error"]["p99"]
    # FP32 logits of size ~47 carry ~47 * 2**-24 each; the FP32 log-sum-exp adds a few ulps.
    assert fixed["logprob_error_max"] < 1e-4


def test_item04_gradient_cosine_agrees_with_the_relative_change(item04_result):
    for side in ("cited", "fixed"):
        rel, cos = item04_result[side]["grad_rel_l2"], item04_result[side]["grad_cosine"]
        # g = g64 + e: 1 - cos is at most |e|^2 / (2 |g|^2) to leading order.
        assert 0.0 <= 1.0 - cos <= 0.6 * rel**2 + 1e-12
    assert item04_result["fixed"]["grad_rel_l2"] < 1e-4


def test_item04_bias_agrees_with_bf16_rounding_variance(item04_result):
    expected = item04_result["expected_bias_one_minus_p"]
    # Uniform rounding of spacing 0.25 has variance 0.25**2 / 12; the relative bias of 1 - p_t
    # reaches that for a confident token and is smaller otherwise (or with finer spacing).
    assert 0.0 < expected <= 0.25**2 / 12
    cited = item04_result["cited"]
    assert abs(cited["bias_one_minus_p"] - expected) < 4 * cited["bias_one_minus_p_stderr"]
    assert abs(item04_result["fixed"]["bias_one_minus_p"]) < 1e-5


# Item 5 ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item05():
    return _load("item05_bf16_grad_accum")


@pytest.fixture(scope="module")
def item05_grads(item05):
    return item05.microbatch_grads()


@pytest.fixture(scope="module")
def item05_result(item05, item05_grads):
    return item05.measure(grads=item05_grads)


def test_item05_reproduced_in_bf16_and_not_with_fp32_staging(item05, item05_result):
    assert item05.is_reproduced(item05_result["cited"])
    assert not item05.is_reproduced(item05_result["fixed"])


def test_item05_param_grad_is_a_bf16_running_sum(item05, item05_grads):
    per_call, accumulated = item05_grads
    running = per_call[0]
    for call, grad in enumerate(per_call[1:], start=2):
        running = (running.float() + grad.float()).bfloat16()
        if call in accumulated:
            assert accumulated[call].dtype == torch.bfloat16
            assert torch.equal(accumulated[call], running)


def test_item05_error_matches_one_rounding_per_call(item05, item05_grads, item05_result):
    per_call, _ = item05_grads
    running = per_call[0]
    truth = per_call[0].double()
    variance = torch.zeros_like(truth)
    for call, grad in enumerate(per_call[1:257], start=2):
        exact = running.double() + grad.double()
        # Each += rounds to 8 significant bits: error ~ uniform over one spacing, var s**2 / 12.
        spacing = torch.exp2(torch.floor(torch.log2(exact.abs().clamp_min(1e-30))) - 7)
        variance += torch.where(exact == 0, 0.0, spacing.square() / 12)
        running = exact.float().bfloat16()
        truth += grad.double()
        if call in (16, 256):
            predicted = float(variance.sum().sqrt() / truth.norm())
            measured = item05_result["cited"][call]["rel_l2"]
            assert 0.7 < measured / predicted < 1.4, (call, measured, predicted)


def test_item05_error_is_mostly_noise_with_a_shrink(item05_result):
    for count, m in item05_result["cited"].items():
        if 1 < count <= 256:
            assert abs(m["err_cos_with_grad"]) < 0.1
    # A BF16 running sum drifts toward zero (coarser spacing above each power of two).
    cited = item05_result["cited"]
    assert cited[256]["signed_err_along_sign"] < 0
    assert cited[256]["err_cos_with_grad"] < cited[16]["err_cos_with_grad"] < 0.01


@pytest.fixture(scope="module")
def item05_steady(item05):
    return {snr: item05.steady_signal(snr) for snr in item05.STEADY_SNRS}


def test_item05_steady_signal_sum_falls_short_and_fp32_staging_does_not(item05, item05_steady):
    for by_count in item05_steady.values():
        last = by_count[item05.STEADY_CALLS]
        # Far beyond its standard error: the audit's "unbiased" does not hold here.
        assert last["bias"].value < -0.1
        assert abs(last["bias"].value) > 10 * last["bias"].stderr
        # Few calls: no bias beyond the noise.
        assert abs(by_count[16]["bias"].value) < 4 * by_count[16]["bias"].stderr + 1e-4
        # FP32 staging of the same BF16 gradients: no bias at any count.
        assert all(abs(m["fixed_bias"].value) < 1e-6 for m in by_count.values())
    # A stronger signal stalls more: each call's increment is nearer the sum's direction.
    weak, strong = (item05_steady[snr][item05.STEADY_CALLS]["bias"] for snr in (1.0, 3.0))
    assert strong.value < weak.value


def test_item05_stalls_where_increments_fall_below_half_a_spacing(item05):
    # A sum S in [2**e, 2**(e+1)) has BF16 spacing 2**(e-7); an increment g below half of it,
    # 2**(e-8), rounds off. So a steady sum of g stops at the first power of two 2**e above
    # 256 g: between 256 and 512 increments, whatever the scale, of the 1024 added.
    leaf = torch.zeros(1, dtype=torch.bfloat16, requires_grad=True)
    g = torch.tensor([1e-3]).bfloat16()
    for _ in range(1024):
        torch.autograd.backward(leaf, g)
    assert leaf.grad is not None
    kept = float(leaf.grad.float()) / float(g.float())
    assert 256 <= kept <= 512
    power = 2.0 ** math.ceil(math.log2(256 * float(g.float())))
    assert float(leaf.grad.float()) == power


def test_item05_is_reproduced_gates_on_growth_not_bias(item05, item05_result):
    cited = item05_result["cited"]
    assert item05.is_reproduced(cited)
    # The bias is reported, not gated: a more biased error is still the finding.
    biased = {n: {**m, "err_cos_with_grad": -0.5} for n, m in cited.items()}
    assert item05.is_reproduced(biased)


def test_item05_fixed_form_is_not_reproduced(item05, item05_result):
    fixed = item05_result["fixed"]
    assert all(m["rel_l2"] < 1e-6 for m in fixed.values())
    assert not item05.is_reproduced(fixed)


def test_item05_fp32_staging_error_is_fp32_sized(item05_result):
    for count, m in item05_result["fixed"].items():
        # At most one FP32 rounding (2**-24 relative) of the running sum per call.
        assert m["rel_l2"] <= count * 2.0**-24


# Item 11 -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item11():
    return _load("item11_bf16_lora_add")


@pytest.fixture(scope="module")
def item11_results(item11):
    return item11.measure(fixed=False), item11.measure(fixed=True)


def test_item11_reproduced_in_bf16_and_not_in_fp32(item11, item11_results):
    cited, fixed = item11_results
    assert item11.is_reproduced(cited)
    assert not item11.is_reproduced(fixed)


@pytest.mark.parametrize("mode", ["per_element", "gaussian"])
@pytest.mark.parametrize("exponent", [-10.0, -9.0, -8.5, -8.0, -6.0])
def test_item11_delta_vanishes_exactly_below_half_an_ulp(item11, item11_results, mode, exponent):
    base, delta = item11.make_operands(2.0**exponent, mode)
    total = item11.add(base, delta, fixed=False)
    toward_zero = (delta.double() * base.double()) < 0
    half_gap = _bf16_half_gap(base, toward_zero)
    mag = delta.double().abs()
    even = (base.view(torch.int16) & 1) == 0  # round-to-nearest-even keeps an even base on ties
    predicted = (delta != 0) & ((mag < half_gap) | ((mag == half_gap) & even))
    assert torch.equal(predicted, (total == base) & (delta != 0))
    index = item11.EXPONENTS.index(exponent)
    measured = item11_results[0][mode]["fully_lost"][index]
    assert measured == pytest.approx(float(predicted.double().mean()), abs=1e-12)


def test_item11_threshold_is_half_an_ulp_of_the_base(item11, item11_results):
    cited, _ = item11_results
    for ratio, fully in zip(cited["ratios"], cited["per_element"]["fully_lost"], strict=True):
        # Half an ulp of |base| in [2**e, 2**(e+1)) is 2**(e-8): between 2**-9 and 2**-8 of it.
        if ratio <= 2.0**-9:
            assert fully == 1.0
        elif ratio > 2.0**-8:
            assert fully == 0.0
        else:
            assert 0.0 < fully < 1.0
    edges = item11.threshold(cited)
    assert edges["all_lost_up_to"] == 2.0**-9
    assert 2.0**-8 < edges["none_lost_from"] <= 2.0**-7.5


def test_item11_gaussian_curve_crosses_half_near_half_an_ulp(item11_results):
    cited, _ = item11_results
    lost = dict(zip(cited["ratios"], cited["gaussian"]["lost"], strict=True))
    # For N(0, 1) base the typical |base| is ~0.67, whose half ulp is 2**-9.
    assert lost[2.0**-12] > 0.8 and lost[2.0**0] < 1e-3
    half = [r for r, f in lost.items() if f < 0.5]
    assert 2.0**-11 <= min(half) <= 2.0**-9


def test_item11_fp32_add_keeps_the_delta(item11_results):
    _, fixed = item11_results
    for mode in ("per_element", "gaussian"):
        assert max(abs(x) for x in fixed[mode]["lost"]) < 1e-6
    assert max(fixed["per_element"]["fully_lost"]) == 0.0


# Item 1 (#1108) ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def item01():
    return _load("item01_te_cross_entropy")


@pytest.fixture(scope="module")
def item01_results(item01):
    return {
        "cited": item01.measure(),
        "fixed": item01.measure(fixed=True),
        "fp32": item01.measure(fp32_store=True),
    }


def test_item01_reproduced_on_te_path_and_not_with_fixes(item01, item01_results):
    assert item01.is_reproduced(item01_results["cited"])
    assert not item01.is_reproduced(item01_results["fixed"])
    assert not item01.is_reproduced(item01_results["fp32"])


def test_item01_bf16_spacing_just_below_one():
    one = torch.tensor(1.0)
    below = 1.0 - 2.0**-8  # [0.5, 1) has spacing 2**-1 * 2**-7
    assert float(torch.tensor(below).bfloat16()) == below
    assert float(torch.tensor(1.0 - 2.0**-9).bfloat16()) == 1.0  # midpoint ties to even 1.0
    assert float(torch.tensor(1.0 - 2.0**-9 - 2.0**-20).bfloat16()) == below
    assert float(one.bfloat16()) == 1.0


def test_item01_zero_exactly_where_fp32_p_rounds_to_one(item01, item01_results):
    logits, targets = item01.make_logits(0)
    m, d = item01.te_softmax_stats(logits)
    p32 = torch.exp(logits[torch.arange(len(targets)), targets].float() - m) / d
    zero = torch.tensor(item01_results["cited"]["target_grad"]) == 0
    assert torch.equal(zero, p32 >= 1.0 - 2.0**-9)
    cited = item01_results["cited"]
    assert cited["largest_1mp_with_zero_grad"] <= 2.0**-9 < cited["smallest_1mp_with_nonzero_grad"]
    assert abs(cited["largest_1mp_with_zero_grad"] - 2.0**-9) < 2.0**-9 * 0.05


def test_item01_target_gradient_is_quantized_to_bf16_steps_below_one(item01_results):
    cited = item01_results["cited"]
    for p, grad in zip(cited["p"], cited["target_grad"], strict=True):
        if p > 0.5:
            steps = grad * 2.0**8  # bf16(p) - 1 with bf16(p) in [0.5, 1]: a multiple of 2**-8
            assert steps == round(steps)


def test_item01_fixes_leave_one_rounding(item01_results):
    for side in ("fixed", "fp32"):
        result = item01_results[side]
        assert result["zero_rows"] == 0
        for p, grad in zip(result["p"], result["target_grad"], strict=True):
            q = 1.0 - p
            if q > 1e-3:  # where FP32's own p (error ~1e-7) does not matter
                bound = 2.0**-8 if side == "fixed" else 1e-4
                assert abs(grad + q) <= bound * q + 1e-6


def test_item01_te_kernel_agrees_with_the_emulation(item01, item01_results):
    te_grad = item01.te_kernel_target_grad(*item01.make_logits(0))
    if te_grad is None:
        pytest.skip("transformer_engine or CUDA not available")
    emulated = torch.tensor(item01_results["cited"]["target_grad"])
    assert torch.equal(te_grad == 0, emulated == 0)


# Each as a script -----------------------------------------------------------------------


# Every script's text output is run by tests/repros/test_captured.py; one --json run is enough.
@pytest.mark.parametrize("name", ["item11_bf16_lora_add"])
def test_script_prints_a_json_report(name, tmp_path, run_script):
    # Run from elsewhere: the script must find _common through its own folder.
    proc = run_script(REPROS / f"{name}.py", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] == "reproduced"
    assert report["item"] in {"1", "4", "5", "11"}
    values = [m["value"] for m in report["measurements"]]
    assert values
    assert all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)
