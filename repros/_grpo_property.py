"""GRPO equal-reward claims as properties of ART's advantages and pack normalization (issue #37).

Item 3's two claims (the audit's) and follow-up 1001's two on the same path (artbot's: rewards
equal up to float noise, and equal -inf rewards, which ART's absolute 1e-12 equality guard
misses; moved out of item 3 by issue #51).

The record's Expected: "For a group in which every trajectory has the same reward, whatever the
common reward value and the group size, every token's advantage after GRPO normalization and
pack normalization is exactly 0 (or the group is dropped), and no packed advantage is NaN or
infinite." Each claim is searched over its own part of that domain, one ART step per case (the
batch goes through ``item03_equal_reward_groups.run_batch``: ART's advantage statements and
ART's packer when ``check_art`` runs). Every claim's domain has ``scale_rewards`` both ways
(issue #50: ``scale_rewards=False`` gave +1.0 for every token of an equal-reward group and a
check fixed to True judged that fixed), groups of up to 128 trajectories, and edge cases in
which every (scale_rewards, what is beside the group) pair occurs:

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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import _domain
import _reward_noise

SIZES = (2, 3, 5, 6, 7, 8, 16, 64, 128)
RESIDUE = (0.1, 0.2, 0.3, 0.6, 0.7, 0.9, 1 / 3, 2 / 3)
COVERS = {
    "full-scale-advantage-for-equal-reward-groups": "tokenize's advantages + packer, "
    "scale_rewards both ways; n = 2-128 exactly equal rewards (residue rewards; |r| 1e-3 to "
    "1e8, either sign), alone, beside a solved group or a 0/1 group of 2-128 -> every token 0 "
    "or dropped, nothing NaN/inf, the 0/1 group kept",
    "full-scale-advantage-for-near-equal-reward-groups": "tokenize's advantages + packer, "
    "scale_rewards both ways; n = 2-128 rewards equal by construction (per-step sums in other "
    "orders, neighbours up to 8 ulps), |r| 1e-3 to 1e8, alone or beside a solved or 0/1 group "
    "-> every token 0 or dropped, nothing NaN/inf",
    "nan-advantages": "tokenize's advantages + packer, scale_rewards both ways; n = 2-128 equal "
    "finite rewards (1e-3 to 1e8) beside [1.0] x 2-128, advantage_balance +1 and -1 -> no "
    "packed advantage NaN or inf",
    "nan-advantages-from-non-finite-rewards": "tokenize's advantages + packer, scale_rewards "
    "both ways; [-inf] x 2-128 beside a 0/1 group of 2-128 -> no packed advantage NaN or inf, "
    "the 0/1 group kept",
}
AUDIT = ("full-scale-advantage-for-equal-reward-groups", "nan-advantages")
FOLLOW_UP = (
    "full-scale-advantage-for-near-equal-reward-groups",
    "nan-advantages-from-non-finite-rewards",
)


def _value(rng: Any) -> float:
    if rng.random() < 0.3:
        return rng.choice(RESIDUE)
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
        balance = 0.0
        if claim == "nan-advantages-from-non-finite-rewards":
            group, beside = [-math.inf] * n, "0/1"
        elif claim == "full-scale-advantage-for-near-equal-reward-groups":
            group = _noise(rng, n, _value(rng))
        else:
            group = [_value(rng)] * n
        if claim == "nan-advantages":
            beside, balance = "solved", rng.choice((1.0, -1.0))
        return {
            "rewards": group,
            "beside": beside,
            "beside size": rng.choice((rng.randint(2, 16), rng.randint(2, 128))),
            "advantage_balance": balance,
            "scale_rewards": rng.random() < 0.5,
        }

    return draw


def edges(claim: str, near_equal: list[float]) -> list[dict[str, Any]]:
    """The records' own batches first (8 x 0.1 beside 8 x 1.0, and so on); then the same
    group with every (scale_rewards, beside) pair, group sizes cycling up to 128."""
    case: dict[str, Any] = {
        "beside": "solved",
        "beside size": 8,
        "advantage_balance": 0.0,
        "scale_rewards": True,
    }
    if claim == "full-scale-advantage-for-equal-reward-groups":
        own = [dict(case, rewards=[0.1] * 8), dict(case, rewards=[0.7] * 3, beside="alone")]
    elif claim == "full-scale-advantage-for-near-equal-reward-groups":
        own = [dict(case, rewards=list(near_equal), beside="alone")]
    elif claim == "nan-advantages":
        own = [dict(case, rewards=[0.7] * 8, advantage_balance=1.0)]
    else:
        own = [dict(case, rewards=[-math.inf] * 4, beside="0/1", **{"beside size": 4})]
    besides = ("solved",) if claim == "nan-advantages" else ("alone", "solved", "0/1")
    pairs = [(scale, beside) for scale in (True, False) for beside in besides]
    out = list(own)
    for i, (scale, beside) in enumerate(pairs):
        base: list[float] = list(own[0]["rewards"])
        n = SIZES[-1 - i % 3]  # 128, 64, 16
        rewards = (base * n)[:n] if claim != FOLLOW_UP[0] else list(base)
        size = SIZES[-1 - (i + 1) % 3]
        out.append(
            dict(
                own[0], rewards=rewards, beside=beside, scale_rewards=scale, **{"beside size": size}
            )
        )
    return out


def batch(case: dict[str, Any]) -> list[list[float]]:
    """The step's groups: the equal group first, then the one beside it (if any)."""
    size = case["beside size"]
    if case["beside"] == "solved":
        return [list(case["rewards"]), [1.0] * size]
    if case["beside"] == "0/1":
        return [list(case["rewards"]), [float(i % 2) for i in range(size)]]
    return [list(case["rewards"])]


FULL_SCALE = (
    "full-scale-advantage-for-equal-reward-groups",
    "full-scale-advantage-for-near-equal-reward-groups",
)


def holds(claim: str, run_batch: Callable[..., dict[str, Any]], case: dict[str, Any]) -> Any:
    """The property on one case: a ``_domain.Failure`` or None (the NaN claims are judged on
    finiteness alone, the full-scale ones on the equal group's advantages too)."""
    groups = batch(case)
    try:
        out = run_batch(
            groups,
            advantage_balance=case["advantage_balance"],
            scale_rewards=case.get("scale_rewards", True),
        )
    except Exception as exc:
        return _domain.Failure(f"raised {type(exc).__name__}: {exc}"[:80], "a step")
    if not out["trained"]:
        return None  # nothing trained: every group dropped
    values = [v for g in out["groups"].values() if g for v in g]
    bad = [v for v in values if not math.isfinite(v)]
    if bad:
        return _domain.Failure(
            f"{len(bad)} of {len(values)} packed advantages {bad[0]!r}", "finite"
        )
    equal = out["groups"][0] or []
    worst = max((abs(v) for v in equal), default=0.0)
    if claim in FULL_SCALE and worst != 0.0:
        return _domain.Failure(float(f"{worst:.4g}"), "0 (or dropped)")
    if case["beside"] == "0/1":
        spread = out["groups"][1] or []
        if max((abs(v) for v in spread), default=0.0) <= 0.5:
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


def search(claim: str, run_batch: Callable[..., dict[str, Any]], near_equal: list[float]) -> Any:
    return _domain.search(
        covers=COVERS[claim],
        edges=edges(claim, near_equal),
        sample=sample(claim),
        holds=lambda case: holds(claim, run_batch, case),
        shrink=shrink,
        max_inputs=150,
    )
