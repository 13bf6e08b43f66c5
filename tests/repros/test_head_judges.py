"""Items 2, 4 and 401's judges (issue #53), without ART: artbot draws their inputs and judges
what came back in its own process, so the plan must be made ART-free and as JSON, and each
judge must tell FP32-accurate outputs from rounded ones, a tampered number from a measured one,
and answer a malformed measurement with a failure, never an exception.

The outputs judged here are made by this project's own models of ART's functions (the item
scripts' BF16 path and its fix; a TrainerRank with one head method around the check's stand-in
output layer), run through the checks' own ``measure``.
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from artbot.repro.scripts import import_script

REPROS = Path(__file__).resolve().parents[2] / "repros"
sys.path.insert(0, str(REPROS))  # as the repros find their helpers
domain = import_script(REPROS / "_domain.py", "_domain")
shown = import_script(REPROS / "_shown.py", "shown_under_test")
simpler = import_script(REPROS / "_simpler.py", "simpler_under_test")
item02 = import_script(REPROS / "item02_unsloth_logsumexp.py", "item02_under_test")
item04 = import_script(REPROS / "item04_bf16_lm_head.py", "item04_under_test")
item401 = import_script(REPROS / "item401_unsloth_bf16_logits.py", "item401_under_test")
ITEMS = {2: item02, 4: item04, 401: item401}
pytestmark = pytest.mark.repro


class Head:
    """TrainerRank's ``_local_head_stats`` as the check calls it: the output layer's logits of
    the rows, with the operands upcast to FP32 first when ``fp32`` (the audit's fix)."""

    def __init__(self, fp32: bool) -> None:
        self.fp32 = fp32

    def _local_head_stats(
        self, model: Any, hidden: torch.Tensor, *, output_weight: Any, **_: Any
    ) -> tuple[torch.Tensor, None, None, None]:
        layer = model.output_layer
        weight = layer.weight if output_weight is None else output_weight
        if self.fp32:
            hidden, weight = hidden.float(), weight.float()
        return layer(hidden.unsqueeze(1), weight=weight)[0], None, None, None


def _entry(callee: Any) -> Any:
    """The checks' entry (``_art_logprobs.Entry``, the stand-in trainer and its model) around a
    model of ART's caller ``calculate_logprobs``: the model's forward under the call's grad and
    inference modes, then ``callee`` (this project's model of ``_calculate_logprobs``)."""

    def caller(
        dtype: torch.dtype,
        trainer: Any,
        input_ids: torch.Tensor,
        causal_mask: Any,
        forward_kwargs: dict[str, Any],
        next_input_ids: torch.Tensor,
        lm_head_t: torch.Tensor,
        *,
        chunk_size: int,
        inference_mode: bool,
        no_grad: bool,
        **_: Any,
    ) -> Any:
        with torch.inference_mode(inference_mode), torch.set_grad_enabled(not no_grad):
            hidden = trainer.model(input_ids=input_ids, causal_mask=causal_mask).logits
        return callee(lm_head_t, hidden, next_input_ids, chunk_size)

    return item401._art_logprobs.Entry(caller)


def _measures(item: int, fp32: bool) -> Any:
    if item == 2:
        impl = item02.calculate_logprobs_fp32 if fp32 else item02.calculate_logprobs_bf16
        return item02._art_lse.LseMeasure(_entry(impl))
    if item == 4:
        return item04._art_head.HeadMeasure(Head(fp32))

    def logprobs(*args: Any) -> Any:
        return item401.calculate_logprobs(*args, fp32_matmul=fp32)

    return item401._art_logprobs.LogitsMeasure(_entry(logprobs))


def _oracle(item: int) -> Any:
    (oracle,) = ITEMS[item].ORACLES.values()
    return oracle


def _cases(item: int) -> list[dict[str, Any]]:
    return _oracle(item).plan(random.Random(5))


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_the_plan_is_json_made_without_art_and_its_draws_follow_the_seed(item: int) -> None:
    oracle = _oracle(item)
    before = {name for name in sys.modules if name.split(".")[0] == "art"}
    plans = [oracle.plan(random.Random(seed)) for seed in (1, 1, 2)]
    assert not {name for name in sys.modules if name.split(".")[0] == "art"} - before
    assert plans[0] == plans[1] == domain.as_json(plans[0])
    edges = len(oracle.edges())
    assert len(plans[0]) == edges + oracle.draws and oracle.draws > 0
    assert plans[0][:edges] == plans[2][:edges] and plans[0][edges:] != plans[2][edges:]
    assert all(isinstance(case["seed"], int) for case in plans[0])


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_the_judge_passes_fp32_outputs_and_fails_rounded_ones(item: int) -> None:
    judge = _oracle(item).judge
    fixed, released = _measures(item, fp32=True), _measures(item, fp32=False)
    rounded = []
    for case in _cases(item):
        assert judge(case, domain.as_json(fixed(case))) is None, case
        if case["dtype"] != "float32":
            rounded.append(judge(case, domain.as_json(released(case))) is not None)
    # FP32 inputs are exact either way; every BF16 or FP16 input of this plan (22, 28 and 17
    # of them) shows the rounding: item 2's dead zone, the LM heads' rounded logits.
    assert rounded and all(rounded), rounded


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_a_number_moved_by_a_bf16_step_is_caught(item: int) -> None:
    judge = _oracle(item).judge
    case = _cases(item)[0]
    raw = domain.as_json(_measures(item, fp32=True)(case))
    key = {2: "lp", 4: "logits", 401: "lp"}[item]
    values = raw[key]
    first = values[0] if isinstance(values[0], float) else values[0][0]
    moved = first + max(abs(first), 1.0) * 2.0**-8  # one BF16 step
    if isinstance(values[0], float):
        values[0] = moved
    else:
        values[0][0] = moved
    assert judge(case, raw) is not None


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_a_malformed_measurement_is_a_failure(item: int) -> None:
    judge = _oracle(item).judge
    case = next(c for c in _cases(item) if c["grad"] not in ("off", False))
    good = domain.as_json(_measures(item, fp32=True)(case))
    assert judge(case, good) is None
    bad: list[Any] = [None, [], {}, "fixed", {k: "x" for k in good}]
    for key, value in good.items():
        if isinstance(value, list):
            bad.append({**good, key: value[:-1]})  # one entry short
            bad.append({**good, key: _nan(value)})
        if isinstance(value, bool):
            bad.append({**good, key: False})  # "no gradient"
    for raw in bad:
        assert isinstance(judge(case, raw), domain.Failure), raw


@pytest.mark.parametrize("item", [2, 401])
def test_each_call_without_grad_is_judged(item: int) -> None:
    """Without grad the checks run every call ``compute_loss`` makes of ``calculate_logprobs``
    without grad: one call's BF16 log-probabilities, or a call not measured, is a failure."""
    judge = _oracle(item).judge
    case = next(c for c in _cases(item) if c["grad"] in ("off", False))
    good = domain.as_json(_measures(item, fp32=True)(case))
    rounded = domain.as_json(_measures(item, fp32=False)(case))
    assert set(good["lp_calls"]) == {"reference", "reference_adapter"}
    assert judge(case, good) is None
    assert judge(case, rounded) is not None
    for call in good["lp_calls"]:
        one = {**good, "lp_calls": {**good["lp_calls"], call: rounded["lp"]}}
        assert judge(case, one) is not None, call
        less = {**good, "lp_calls": {k: v for k, v in good["lp_calls"].items() if k != call}}
        assert isinstance(judge(case, less), domain.Failure), call


def _nan(value: list[Any]) -> list[Any]:
    head = value[0]
    return [_nan(head) if isinstance(head, list) else math.nan, *value[1:]]


def test_the_head_measure_reaches_arts_call_with_the_cases_operands() -> None:
    """The stand-in model that item 4's measure builds: the layer sees the case's dtype, and a
    weight of two dtypes is refused (and judged a failure), as F.linear refuses it."""
    measure = _measures(4, fp32=False)
    case = domain.as_json(item04._art_head.edges()[3])
    measure(case)
    assert measure.seen == {(case["dtype"], case["dtype"])}

    class Mixed(Head):
        def _local_head_stats(self, model: Any, hidden: torch.Tensor, **kw: Any) -> Any:
            return super()._local_head_stats(model, hidden.float(), **kw)

    refused = item04._art_head.HeadMeasure(Mixed(fp32=False))(case)
    assert "refused" in refused
    assert isinstance(_oracle(4).judge(case, refused), domain.Failure)


# Each item's domain bounds, and a case past them (sizes whose operands would take gigabytes).
BOUNDS = {
    2: ("_art_lse", "CHOICES", "LIMITS", {"rows": 2100, "vocab": 151_936}),
    4: ("_art_head", "CHOICES", "LIMITS", {"rows": 512, "vocab": 151_936, "hidden": 2560}),
    401: ("_art_logprobs", "LOGITS_CHOICES", "LOGITS_LIMITS", {"seq": 1100, "vocab": 151_936}),
}


@pytest.mark.parametrize("item", sorted(ITEMS))
def test_every_input_the_check_can_make_is_in_the_judges_domain_and_none_past_it(
    item: int,
) -> None:
    helper, choices, limits, huge = BOUNDS[item]
    module = getattr(ITEMS[item], helper)
    simplest = getattr(module, "LOGITS_SIMPLEST" if item == 401 else "SIMPLEST")
    judge = _oracle(item).judge
    for seed in range(20):
        for case in _oracle(item).plan(random.Random(seed)):
            for tried in [case, *domain.as_json(list(simpler.toward(case, simplest)))]:
                why = shown.outside(tried, getattr(module, choices), getattr(module, limits))
                assert why is None, (why, tried)
    case = {**_cases(item)[0], **huge}
    failure = judge(case, {})
    assert isinstance(failure, domain.Failure) and "past the domain" in str(failure.measured)
    for key, value in [("dtype", "float8"), ("seed", -1), ("seed", 1.5), ("seed", True)]:
        failure = judge({**_cases(item)[0], key: value}, {})
        assert isinstance(failure, domain.Failure) and "outside" in str(failure.measured)


def test_the_domain_says_the_checks_enter_at_the_caller_and_run_cpu_tensors_only() -> None:
    """A patch gated on the device (FP32 on CPU tensors only) is judged fixed: a CPU cannot run
    CUDA tensors. The domain each verdict prints (its first 400 characters) says so plainly,
    and names the caller the checks enter at."""
    lp = item401._art_logprobs
    for covers in (item02._art_lse.COVERS, lp.LOGITS_COVERS):
        shown_covers = covers[:400]
        assert shown_covers.endswith(lp.SCOPE), covers
        assert lp.ENTERED in shown_covers, covers
