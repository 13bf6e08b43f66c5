"""GRPO equal-reward claims as properties of ART's advantages and pack normalization (issue #37).

Item 3's two claims (the audit's) and follow-up 1001's two on the same path (artbot's: rewards
equal up to float noise, and equal -inf rewards, which ART's absolute 1e-12 equality guard
misses; moved out of item 3 by issue #51).

The record's Expected: "For a group in which every trajectory has the same reward, whatever the
common reward value and the group size, every token's advantage after GRPO normalization and
pack normalization is exactly 0 (or the group is dropped), and no packed advantage is NaN or
infinite." Each claim is searched over its own part of that domain, one ART step per case (in
``check_art``, ``_grpo_art.step``: ART's ``LocalBackend._prepare_training_batch``, its
tokenizer and packer, run whole; standalone, item 3's models). The domain is ART's
configuration on this path, each value both ways (issue #50: ``scale_rewards=False`` gave +1.0
for every token of an equal-reward group and a check fixed to True judged that fixed):
``scale_rewards``, ``allow_training_without_logprobs``, the backend's ``pack_results``
(LocalBackend False, MegatronBackend's packing settings True) and ``advantage_balance`` (0
and +-0.5; +-1 for the NaN claim), groups of up to 128 trajectories beside a group of up to
128, and edge cases in which every pair of
(scale_rewards, pack_results, allow_training_without_logprobs, balance, what is beside, size)
occurs
(``_domain.pairwise_cases``), the largest sizes together in the first:

- ``full-scale-advantage-for-equal-reward-groups``: a group of n (2-128) exactly equal rewards r
  (the residue rewards 0.1, 0.7, 1/3, ..., or |r| from 1e-3 to 1e8, either sign), alone or next
  to a solved group [1.0] x k (dropped) or a 0/1 group;
- ``full-scale-advantage-for-near-equal-reward-groups``: the same with rewards equal by
  construction (the same 2-8 per-step rewards summed in other orders, or float64 neighbours up
  to 8 ulps apart);
- ``nan-advantages``: finite equal rewards next to [1.0] x k with ``advantage_balance`` +1 or -1;
- ``nan-advantages-from-non-finite-rewards``: [-inf] x n next to a 0/1 group.

A case fails when a token of the equal group gets a packed advantage other than exactly 0, or
any packed advantage is NaN or infinite, or (a function that zeroes everything tells equal
groups from others no better) a 0/1 group beside it has no token with |advantage| > 0.5.

The split (issue #53): :func:`measure` runs the step (in the check's process) and returns, per
group, its trained tokens, their largest finite |advantage| and how many are not finite;
:func:`judge` decides on those alone, and :func:`oracle` is what artbot judges a claim with
(its inputs drawn ART-free: :func:`edges` and :func:`sample`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import _domain
import _reward_noise

SIZES = (2, 3, 5, 6, 7, 8, 16, 64, 128)
RESIDUE = (0.1, 0.2, 0.3, 0.6, 0.7, 0.9, 1 / 3, 2 / 3)
_PATH = (
    "LocalBackend._prepare_training_batch (tokenizer + packer); scale_rewards, pack_results, "
    "allow_training_without_logprobs both ways"
)
COVERS = {
    "full-scale-advantage-for-equal-reward-groups": f"{_PATH}, advantage_balance 0/+-0.5; n = "
    "2-128 exactly equal rewards (residue rewards; |r| 1e-3 to 1e8, either sign), alone, beside "
    "a solved group or a 0/1 group of 2-128 -> every token 0 or dropped, nothing NaN/inf, the "
    "0/1 group kept",
    "full-scale-advantage-for-near-equal-reward-groups": f"{_PATH}, advantage_balance 0/+-0.5; "
    "n = 2-128 rewards equal by construction (per-step sums in other orders, neighbours up to 8 "
    "ulps), |r| 1e-3 to 1e8, alone or beside a solved or 0/1 group -> every token 0 or "
    "dropped, nothing NaN/inf",
    "nan-advantages": f"{_PATH}; n = 2-128 equal finite rewards (1e-3 to 1e8) beside [1.0] x "
    "2-128, advantage_balance +1 and -1 -> no packed advantage NaN or inf",
    "nan-advantages-from-non-finite-rewards": f"{_PATH}, advantage_balance 0/+-0.5; [-inf] x "
    "2-128 beside a 0/1 group of 2-128 -> no packed advantage NaN or inf, the 0/1 group kept",
}
AUDIT = ("full-scale-advantage-for-equal-reward-groups", "nan-advantages")
FOLLOW_UP = (
    "full-scale-advantage-for-near-equal-reward-groups",
    "nan-advantages-from-non-finite-rewards",
)
FULL_SCALE = (AUDIT[0], FOLLOW_UP[0])
# Rewards equal by construction near 1e4, one ulp (1.8e-12) apart: outside 0.5.21's 1e-12.
NEAR_EQUAL = _reward_noise.summed_two_ways(_reward_noise.STEPS_AT_1E4)
DRAWS = 130  # besides the edges: about 150 inputs a claim, as before the split


def balances(claim: str) -> tuple[float, ...]:
    """``advantage_balance`` values of the claim's domain (ART's range is -1 to 1)."""
    return (1.0, -1.0) if claim == "nan-advantages" else (0.0, 0.5, -0.5)


def _value(rng: Any) -> float:
    if rng.random() < 0.3:
        return float(rng.choice(RESIDUE))
    return rng.choice((-1.0, 1.0, 1.0)) * 10 ** rng.uniform(-3, 8)


def _noise(rng: Any, n: int, value: float) -> list[float]:
    if rng.random() < 0.5:
        return _reward_noise.reordered_sums(rng, n, value)
    return _reward_noise.ulp_neighbours(rng, n, value)


def sample(claim: str) -> Callable[[Any], dict[str, Any]]:
    """The sampler of ``claim``'s part of the domain."""

    def draw(rng: Any) -> dict[str, Any]:
        n = rng.choice((rng.randint(2, 128), rng.choice(SIZES)))
        beside = rng.choice(("alone", "solved", "0/1"))
        if claim == "nan-advantages-from-non-finite-rewards":
            group, beside = [-math.inf] * n, "0/1"
        elif claim == "full-scale-advantage-for-near-equal-reward-groups":
            group = _noise(rng, n, _value(rng))
        else:
            group = [_value(rng)] * n
        if claim == "nan-advantages":
            beside = "solved"
        return {
            "rewards": group,
            "beside": beside,
            "beside size": rng.choice((rng.randint(2, 16), rng.randint(2, 128))),
            "advantage_balance": rng.choice(balances(claim)),
            "scale_rewards": rng.random() < 0.5,
            "pack_results": rng.random() < 0.5,
            "allow_training_without_logprobs": rng.random() < 0.5,
        }

    return draw


def edges(claim: str) -> list[dict[str, Any]]:
    """The records' own batches first (8 x 0.1 beside 8 x 1.0, and so on); then a covering
    array over (scale_rewards, pack_results, allow_training_without_logprobs,
    advantage_balance, beside, group size), the first with every largest value."""
    case: dict[str, Any] = {
        "beside": "solved",
        "beside size": 8,
        "advantage_balance": 0.0,
        "scale_rewards": True,
        "pack_results": False,
        "allow_training_without_logprobs": False,
    }
    if claim == "full-scale-advantage-for-equal-reward-groups":
        own = [dict(case, rewards=[0.1] * 8), dict(case, rewards=[0.7] * 3, beside="alone")]
    elif claim == "full-scale-advantage-for-near-equal-reward-groups":
        own = [dict(case, rewards=list(NEAR_EQUAL), beside="alone")]
    elif claim == "nan-advantages":
        own = [dict(case, rewards=[0.7] * 8, advantage_balance=1.0)]
    else:
        own = [dict(case, rewards=[-math.inf] * 4, beside="0/1", **{"beside size": 4})]
    besides = {"nan-advantages": ("solved",), FOLLOW_UP[1]: ("0/1",)}
    dimensions = {
        "scale_rewards": (False, True),
        "pack_results": (False, True),
        "allow_training_without_logprobs": (False, True),
        "advantage_balance": balances(claim),
        "beside": besides.get(claim, ("alone", "solved", "0/1")),
        "n": (16, 64, 128),
    }
    base: list[float] = list(own[0]["rewards"])
    out = list(own)
    for i, pick in enumerate(_domain.pairwise_cases(dimensions)):
        n = pick.pop("n")
        rewards = (base * n)[:n]  # the near-equal group repeated: still one ulp apart
        size = dimensions["n"][(i + 1) % 3] if i else 128
        out.append(dict(own[0], **pick, rewards=rewards, **{"beside size": size}))
    return out


def batch(case: dict[str, Any]) -> list[list[float]]:
    """The step's groups: the equal group first, then the one beside it (if any)."""
    size = case["beside size"]
    if case["beside"] == "solved":
        return [list(case["rewards"]), [1.0] * size]
    if case["beside"] == "0/1":
        return [list(case["rewards"]), [float(i % 2) for i in range(size)]]
    return [list(case["rewards"])]


def summary(values: list[float] | None) -> dict[str, Any] | None:
    """What the judge reads of one group's packed advantages (None: no token trained)."""
    if values is None:
        return None
    bad = [v for v in values if not math.isfinite(v)]
    finite = [abs(v) for v in values if math.isfinite(v)]
    return {
        "tokens": len(values),
        "not finite": len(bad),
        "first not finite": repr(bad[0]) if bad else None,
        "max |advantage|": max(finite, default=0.0),
    }


def measure(step: Callable[..., dict[str, Any]], case: dict[str, Any]) -> dict[str, Any]:
    """One step of ``case`` through ``step`` (ART's path, or the models): per group, what
    :func:`summary` keeps; ``raised`` when the step raised."""
    groups = batch(case)
    try:
        out = step(
            groups,
            advantage_balance=float(case["advantage_balance"]),
            scale_rewards=bool(case["scale_rewards"]),
            pack_results=bool(case["pack_results"]),
            allow_training_without_logprobs=bool(case["allow_training_without_logprobs"]),
        )
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:200]}
    return {
        "trained": bool(out["trained"]),
        "groups": [summary(out["groups"][g]) for g in range(len(groups))],
    }


def judge(claim: str, case: dict[str, Any], raw: dict[str, Any]) -> _domain.Failure | None:
    """The property on one measured case (pure): the NaN claims on finiteness alone, the
    full-scale ones on the equal group's advantages too; a 0/1 group beside must keep one."""
    if "raised" in raw:
        return _domain.Failure(f"raised {raw['raised']}"[:80], "a step")
    if not raw["trained"]:
        # Nothing trained: every group dropped, which a 0/1 group beside never rightly is.
        if case["beside"] == "0/1":
            return _domain.Failure("the 0/1 group lost its advantages", "|advantage| > 0.5")
        return None
    groups = [g for g in raw["groups"] if g is not None]
    bad = sum(int(g["not finite"]) for g in groups)
    if bad:
        first = next(g["first not finite"] for g in groups if g["not finite"])
        total = sum(int(g["tokens"]) for g in groups)
        return _domain.Failure(f"{bad} of {total} packed advantages {first}", "finite")
    equal = raw["groups"][0]
    worst = float(equal["max |advantage|"]) if equal else 0.0
    if claim in FULL_SCALE and worst != 0.0:
        return _domain.Failure(float(f"{worst:.4g}"), "0 (or dropped)")
    if case["beside"] == "0/1":
        spread = raw["groups"][1]
        if (float(spread["max |advantage|"]) if spread else 0.0) <= 0.5:
            return _domain.Failure("the 0/1 group lost its advantages", "|advantage| > 0.5")
    return None


def shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for rewards in _domain.shorter(case["rewards"], 2):
        out.append(_domain.replace(case, "rewards", rewards))
    if case["beside"] != "alone" and case["advantage_balance"] == 0.0:
        out.append(_domain.replace(case, "beside", "alone"))
    for size in _domain.toward_int(case["beside size"], 2):
        out.append(_domain.replace(case, "beside size", size))
    return out


def oracle(claim: str) -> _domain.Oracle:
    """How artbot judges ``claim`` and draws its inputs (ART-free)."""
    return _domain.Oracle(
        judge=lambda case, raw: judge(claim, case, raw),
        edges=lambda: edges(claim),
        sample=sample(claim),
        draws=DRAWS,
    )


def search(claim: str, channel: Any, step: Callable[..., dict[str, Any]]) -> Any:
    """``claim``'s property over its domain through ``step``, taped on ``channel`` (the
    check's ``art``; None standalone)."""
    cases = edges(claim)
    return _domain.search(
        covers=COVERS[claim],
        edges=cases,
        sample=sample(claim),
        measure=lambda case: measure(step, case),
        judge=lambda case, raw: judge(claim, case, raw),
        claim=claim,
        channel=channel,
        shrink=shrink,
        max_inputs=len(cases) + DRAWS,
    )
