"""Follow-up 1001 (artbot's own, found while checking the fixes for audit items 10 and 3): ART's
equal-reward guards are an absolute 1e-12, so a group equal up to float noise still gets a
full-scale advantage, and a group of equal -inf rewards gets NaN.

Two paths, one mechanism (issue #51 moved the packed path's two cases here from item 3, whose
line stays the audit's): tinker_native's ``compute_advantages`` (below), and on the other
backends ``tokenize_trajectory_groups``' advantages with 0.5.21's
``utils/grpo.py`` ``rewards_have_zero_variance`` (``abs(r - first) <= 1e-12``) followed by pack
normalization (``item03_equal_reward_groups.run_batch``, whose docstring gives the path): four
rewards near 9437.6 equal by construction but summed in another order are one ulp (1.8e-12)
apart, outside 1e-12, and train at full scale after packing; for [-inf] x 4, -inf - -inf is NaN,
so the guard is False and the NaN advantages are not dropped.

Models ``compute_advantages`` of ART's ``art/tinker_native/data.py`` as released in openpipe-art
0.5.21 and 0.5.23 (lines 32-46): line 37 returns zeros when every reward lies within an absolute
1e-12 of the first; otherwise the rewards become an FP32 tensor, are centred on its mean and
divided by ``std(unbiased=False)`` when that std is above 1e-8 (lines 39-45).

What is measured: the advantages of reward groups that are equal up to float noise, such as
[0.22, 0.22, 0.22 + 2e-12]: 2e-12 apart, outside the 1e-12 guard, yet one and the same FP32
value. In FP32 their mean is an ulp off 0.22, so every member is centred to +1.5e-8, the
population std of the tensor is 1.5e-8 (above 1e-8), and each member gets an advantage of +1.0:
the symptom of #1110 (item 3: an equal-reward group turned into a full-scale advantage signal) on
another backend. The finding holds when any member of such a group, or of one near 1.5e6 whose
members are 2.3e-10 apart (the same per-step rewards summed in another order), gets
|advantage| > 1e-6; or when rewards that really differ ([0, 0, 1], and 1 apart near 1.5e6)
get none (a function that zeroes every group tells noise from signal no better).
The suggested fix, applied beside it: the equality guard relative to the rewards' magnitude
(``math.isclose(r, rewards[0], rel_tol=1e-9, abs_tol=1e-12)``), so noise of 2e-12 at 0.22, or of
2.3e-10 at 1.5e6, counts as equal and gets zeros; ``repros/controls/item1001.toml`` applies the
same edit to ART's code. Computing in float64 instead is not a fix: with the absolute 1e-12 guard
and 1e-8 std floor kept, ulp noise near 1.1e8 still gets advantages of 1
(``adversarial/item1001_half_fix_float64_only.toml``). Nor do the other backends have a sounder
guard to copy: 0.5.21's ``utils/grpo.py`` ``rewards_have_zero_variance`` is the same absolute
1e-12 test.

Assumptions: ``normalize_advantages=True`` (the default). ``check_art`` runs ART's own
``compute_advantages`` on the same groups.
"""

from __future__ import annotations

import math
import random
import struct
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _grpo_art  # noqa: E402
import _grpo_property  # noqa: E402
import _reward_noise  # noqa: E402
import _tinker_datums  # noqa: E402
import item03_equal_reward_groups as item03  # noqa: E402
import item10_sample_std  # noqa: E402

GROUPS = ([0.22, 0.22, 0.22 + 2e-12], [0.15] * 7 + [0.15 + 5e-12])
# Rewards equal by construction at scale (item 3's kind of noise): the same four per-step
# rewards summed forwards twice and backwards once, 2.3e-10 apart near 1.5e6. The check also
# runs them, so an absolute tolerance widened just past the groups above (1e-11) is no fix.
STEPS_AT_1E6 = (144771.2, 421714.2, 464600.2, 460536.1)
AT_SCALE = ([sum(STEPS_AT_1E6), sum(STEPS_AT_1E6), sum(reversed(STEPS_AT_1E6))],)
# Rewards that really differ, at both scales: a fix must keep their advantages (a function that
# zeroes every group, or rewards that overflow FP16, would otherwise pass for one).
DISTINCT = ([0.0, 0.0, 1.0], [sum(STEPS_AT_1E6)] * 2 + [sum(STEPS_AT_1E6) + 1.0])
CONTROLS = ([0.22, 0.22, 0.22], [0.0, 0.0, 1.0])
TOLERANCE = 1e-6


# 0.5.21's compute_advantages (FP32, item 10's model), and with the suggested relative guard.
released = item10_sample_std.make_compute_advantages(fixed=True)


def suggested(rewards: list[float], normalize_advantages: bool = True) -> list[float]:
    """The suggested fix: rewards equal to the first up to a relative 1e-9 (1e-12 near 0) are
    an equal group (zeros); otherwise 0.5.21's arithmetic."""
    if all(math.isclose(r, rewards[0], rel_tol=1e-9, abs_tol=1e-12) for r in rewards[1:]):
        return [0.0] * len(rewards)
    return released(rewards, normalize_advantages)


def measure(impl: Callable[..., list[float]] | None = None) -> dict[str, list[float]]:
    impl = impl or released
    return {str(g): impl(list(g)) for g in (*GROUPS, *AT_SCALE, *CONTROLS, *DISTINCT)}


def noisy_groups(measured: dict[str, list[float]]) -> list[str]:
    """The groups equal up to float noise in which some member gets |advantage| > 1e-6 (or
    one that is not a number); then the distinct groups in which no member gets a finite
    |advantage| above it: noise and signal are not told apart either way."""
    noisy = [
        str(g)
        for g in (*GROUPS, *AT_SCALE)
        if any(not abs(a) <= TOLERANCE for a in measured[str(g)])
    ]
    lost = [
        str(g)
        for g in DISTINCT
        if str(g) in measured
        and not any(math.isfinite(a) and abs(a) > TOLERANCE for a in measured[str(g)])
    ]
    return noisy + lost


def noise_gets_advantage(measured: dict[str, list[float]]) -> bool:
    return bool(noisy_groups(measured))


def packed_0521(rewards: Any, scale_rewards: bool = True) -> list[float | None]:
    """The packed path's advantages as released in 0.5.21: zero (dropped) when every reward
    is within an absolute 1e-12 of the first (``rewards_have_zero_variance``)."""
    if item03.zero_variance_0521(rewards):
        return [None] * len(rewards)
    return item03.grpo_advantages(rewards, scale_rewards)


def measure_packed(advantages: Any = packed_0521, pack: Any = item03.fixed_pack) -> dict[str, Any]:
    """The -inf and near-equal batches through the packed path (0.5.21's model by default)."""
    measured = item03.measure(advantages, pack)
    return {"near_equal": measured["near_equal"], "neg_inf": measured["neg_inf"]}


def build_report() -> _common.Report:
    """Follow-up 1001: near-equal and -inf reward groups, on tinker_native and the packed path."""
    as_released, fixed = measure(), measure(suggested)
    report = _common.Report(
        item="1001",
        title="ART's absolute 1e-12 equal-reward guard: float-noise rewards train at full "
        "scale, -inf NaN",
        models="art/tinker_native/data.py compute_advantages as released in 0.5.21 and 0.5.23 "
        "(L32-L46; the 1e-12 guard at L37); art/utils/grpo.py rewards_have_zero_variance with "
        "tokenize.py's advantages and pack.py's normalization as in 0.5.21; follows audit items "
        "10 and 3",
        setting={
            "normalize_advantages": True,
            "fix": "the equality guard relative to the rewards' magnitude",
        },
    )
    for group in (*GROUPS, *CONTROLS):
        key = str(group)
        report.measure(
            f"rewards {key}: advantages",
            [round(a, 4) for a in as_released[key]],
            fixed=[round(a, 4) for a in fixed[key]],
        )
    report.note(
        "The near-equal groups are one FP32 value each; their FP32 mean is an ulp off, which "
        "the population std (above the 1e-8 floor) scales to +1 for every member."
    )
    packed, packed_fixed = measure_packed(), measure_packed(item03.grpo_advantages_fixed)
    q, qf = packed["near_equal"], packed_fixed["near_equal"]
    report.measure(
        f"packed path, {item03.NEAR_EQUAL_SHOWN}, alone: packed advantage, min..max",
        item03._span(q["equal_group"]),
        fixed=item03._span(qf["equal_group"]) if qf["trained"] else "no training step",
        note="rewards 1.8e-12 apart, outside the absolute 1e-12",
    )
    i, fi = packed["neg_inf"], packed_fixed["neg_inf"]
    report.measure(
        "packed path, 4 x -inf next to [0, 1, 0, 1]: NaN packed advantages",
        f"{i['nan_tokens']} of {i['assistant_tokens']} tokens",
        fixed=f"{fi['nan_tokens']} of {fi['assistant_tokens']} tokens",
        note="-inf - -inf is NaN, so 0.5.21's guard calls the group not equal: "
        f"{not item03.zero_variance_0521(item03.NEG_INF[0])}",
    )
    report.claim("near-equal-group-full-advantage", noise_gets_advantage(as_released))
    for claim_id, hit in item03.follow_up_verdicts(
        item03.measure(packed_0521, item03.fixed_pack)
    ).items():
        report.claim(claim_id, hit)
    return report


# The claim as a property (issue #37). Over this domain, rewards equal up to float noise get
# |advantage| <= 1e-6 (the record's Expected), and rewards that really differ keep a full-scale
# signal (max |advantage| >= 0.5: normalized advantages of distinct rewards have a mean square
# of 1, so some member is at least 1 with the population std, 0.71 with the sample std).
COVERS = (
    "trajectory_groups_to_datums, normalize_advantages both ways; groups of 2-128, reward "
    "1e-3 to 1e8, either sign; noise: per-step sums reordered, neighbours up to 8 ulps, "
    "relative spread up to 1e-11, across an FP32 midpoint or a 6-12 digit decimal boundary -> "
    "|advantage| <= 1e-6 (x max(|r|, 1) unnormalized); signal: spread 1e-6 to 1 of max(|r|, "
    "1) -> max |advantage| >= 0.5 (0.4 x spread unnormalized)"
)
SIGNAL_FLOOR = 0.5
NOISE_KINDS = (
    "reordered sums",
    "ulp neighbours",
    "relative 1e-11",
    "across an FP32 midpoint",
    "across a decimal boundary",
)


def fp32_midpoint(value: float) -> float:
    """The float64 midpoint between ``value`` rounded to FP32 and the next FP32 value away from
    zero: float64 rewards on either side of it round to two different FP32 values."""
    low = struct.unpack("<f", struct.pack("<f", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", low))[0]
    high = struct.unpack("<f", struct.pack("<I", bits + 1))[0]
    return (low + high) / 2


def decimal_boundary(value: float, digits: int) -> float:
    """The midpoint between ``value`` rounded to ``digits`` significant digits and the next such
    decimal away from zero (0.2200000005 for 0.22 and 9): where rounding to that many digits
    splits a group."""
    rounded = Decimal(f"{value:.{digits}g}")
    half = Decimal(5).scaleb(rounded.adjusted() - digits)
    return float(rounded + half.copy_sign(rounded))


def straddling(rng: Any, n: int, boundary: float) -> list[float]:
    """``n`` rewards a relative 1e-15 to 1e-11 of ``boundary`` from it, the first two on
    either side."""
    group = []
    for i in range(n):
        side = (-1.0, 1.0)[i] if i < 2 else rng.choice((-1.0, 1.0))
        group.append(boundary * (1 + side * 10 ** rng.uniform(-15, -11)))
    return group


def _noise_group(rng: Any, n: int, value: float, how: str) -> list[float]:
    if how == "reordered sums":
        return _reward_noise.reordered_sums(rng, n, value)
    if how == "ulp neighbours":
        return _reward_noise.ulp_neighbours(rng, n, value)
    if how == "across an FP32 midpoint":
        return straddling(rng, n, fp32_midpoint(value))
    if how == "across a decimal boundary":
        return straddling(rng, n, decimal_boundary(value, rng.randint(6, 12)))
    return [value * (1 + rng.uniform(-1e-11, 1e-11)) for _ in range(n)]


def _signal_group(rng: Any, n: int, value: float) -> list[float]:
    spread = max(abs(value), 1.0) * 10 ** rng.uniform(-6, 0)
    group = [value + spread * rng.choice((0.0, 1.0, rng.random())) for _ in range(n - 2)]
    group += [value, value + spread]
    rng.shuffle(group)
    return group


def _sample(rng: Any) -> dict[str, Any]:
    n = rng.choice((rng.randint(2, 128), rng.choice((2, 3, 8, 64, 128))))
    value = rng.choice((-1.0, 1.0, 1.0)) * 10 ** rng.uniform(-3, 8)
    normalize = rng.random() < 0.7
    if rng.random() < 0.7:
        how = rng.choice(NOISE_KINDS)
        rewards = _noise_group(rng, n, value, how)
        return {
            "normalize_advantages": normalize,
            "kind": "noise",
            "made by": how,
            "rewards": rewards,
        }
    return {
        "normalize_advantages": normalize,
        "kind": "signal",
        "rewards": _signal_group(rng, n, value),
    }


def _edges() -> list[dict[str, Any]]:
    """The record's groups, both ways; then each kind of noise at the largest group, 128."""
    noise = [list(g) for g in (*GROUPS, *AT_SCALE, CONTROLS[0])]
    for boundary in (fp32_midpoint(0.22), decimal_boundary(0.22, 9)):  # 2e-12 across each
        noise.append([boundary - 1e-12, boundary - 1e-12, boundary + 1e-12])
    signal = [list(g) for g in DISTINCT]
    out = [
        {"normalize_advantages": normalize, "kind": kind, "rewards": g}
        for normalize in (True, False)
        for kind, groups in (("noise", noise), ("signal", signal))
        for g in groups
    ]
    rng = random.Random(1001)
    for how in NOISE_KINDS:
        rewards = _noise_group(rng, 128, rng.uniform(1e-3, 1e8), how)
        out.append(
            {"normalize_advantages": True, "kind": "noise", "made by": how, "rewards": rewards}
        )
    return out


def _is_signal(rewards: list[float]) -> bool:
    """Members differ by at least 1e-6 of the largest magnitude (and of 1: ART's std floor is
    an absolute 1e-8, which a spread of 1e-6 clears at any group size up to 64)."""
    top = max(map(abs, rewards))
    return max(rewards) - min(rewards) >= 1e-6 * max(top, 1.0)


def judge_advantages(case: dict[str, Any], got: list[float]) -> Any:
    """The property on one group's advantages ``got`` (pure): noise within the tolerance,
    signal with some member at full scale, nothing that is not a number."""
    rewards, normalize = list(case["rewards"]), case.get("normalize_advantages", True)
    # Unnormalized advantages are rewards minus their mean: held to a bound at their scale.
    scale = 1.0 if normalize else max(max(map(abs, rewards)), 1.0)
    if case["kind"] == "noise":
        worst = max((abs(a) if math.isfinite(a) else math.inf for a in got), default=0.0)
        bound = TOLERANCE * scale
        return _domain.Failure(float(f"{worst:.4g}"), bound) if worst > bound else None
    floor = SIGNAL_FLOOR if normalize else 0.4 * (max(rewards) - min(rewards))
    top = max((abs(a) for a in got if math.isfinite(a)), default=0.0)
    finite = all(math.isfinite(a) for a in got)
    if top >= floor and finite:
        return None
    return _domain.Failure(float(f"{top:.4g}") if finite else "not finite", f">= {floor:.3g}")


def advantage_property(compute: Callable[..., list[float]], case: dict[str, Any]) -> Any:
    """``compute`` has ``compute_advantages``' signature (this script's models)."""
    rewards, normalize = list(case["rewards"]), case.get("normalize_advantages", True)
    try:
        got = compute(rewards, normalize_advantages=normalize)
    except Exception as exc:
        return _domain.Failure(f"raised {type(exc).__name__}", "advantages")
    return judge_advantages(case, got)


def measure_datums(run: Callable[..., Any], case: dict[str, Any]) -> dict[str, Any]:
    """The split's measuring half (issue #53): the case's group through ART's datums
    (``run``: ``_tinker_datums.advantages`` on a tree), as ``_tinker_datums.spans``."""
    try:
        got = run([list(case["rewards"])], normalize_advantages=case["normalize_advantages"])
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:200]}
    return {"groups": _tinker_datums.spans(got)}


def judge(case: dict[str, Any], raw: dict[str, Any]) -> Any:
    """The judging half (pure): each trajectory's least and greatest token advantage, 0 for
    every trajectory of a group with no datum, NaN for a trajectory with no token."""
    if "raised" in raw:
        return _domain.Failure(f"raised {raw['raised'].split(':')[0]}", "advantages")
    (spans,) = raw["groups"]
    n = len(case["rewards"])
    if spans is None:
        got = [0.0] * n
    elif len(spans) != n:
        return _domain.Failure(f"{len(spans)} trajectories measured", n)
    else:
        got = [float(v) for span in spans for v in (span or [math.nan])]
    return judge_advantages(case, got)


def _shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for rewards in _domain.shorter(case["rewards"], 2):
        if case["kind"] == "noise" or _is_signal(rewards):
            out.append(_domain.replace(case, "rewards", rewards))
    return out


MAX_INPUTS = 600
TINKER = "near-equal-group-full-advantage"


def search_domain(
    compute: Callable[..., list[float]] | None = None,
    *,
    run: Callable[..., Any] | None = None,
    channel: Any = None,
    seed: int = 0,
) -> Any:
    """The property searched over COVERS: ``_domain.Found``; on ART's datums (``run``, taped
    on ``channel``: the split), or on a model with ``compute_advantages``' signature."""
    common: dict[str, Any] = {
        "covers": COVERS,
        "edges": _edges(),
        "sample": _sample,
        "shrink": _shrink,
        "seed": seed,
        "max_inputs": MAX_INPUTS,
    }
    if run is not None:
        return _domain.search(
            **common,
            measure=lambda case: measure_datums(run, case),
            judge=judge,
            claim=TINKER,
            channel=channel,
        )
    assert compute is not None
    return _domain.search(**common, holds=lambda case: advantage_property(compute, case))


# How artbot judges each claim, outside the check's process (issue #53).
ORACLES = {
    TINKER: _domain.Oracle(
        judge=judge, edges=_edges, sample=_sample, draws=MAX_INPUTS - len(_edges())
    ),
    **{cid: _grpo_property.oracle(cid) for cid in _grpo_property.FOLLOW_UP},
}


def check_art(art: Any) -> dict[str, Any]:
    """The property over COVERS through ART's ``trajectory_groups_to_datums`` (the only caller
    of ``compute_advantages``, entered as TinkerNativeBackend.train calls it; see
    ``_tinker_datums``): the advantages of the datums ART trains on; and the packed path's two
    claims through ``tokenize_trajectory_groups`` (item 3's path). artbot judges the taped
    outputs again (``ORACLES``)."""

    def run(groups: list[list[float]], *, normalize_advantages: bool) -> Any:
        return _tinker_datums.advantages(art, groups, normalize_advantages=normalize_advantages)

    found = search_domain(run=run, channel=art)
    first = str(GROUPS[0])
    got = _tinker_datums.one_group(run)(list(GROUPS[0]))
    detail = f"{found.summary()}; rewards {first} get advantages {[round(a, 4) for a in got]}"
    at = [
        _evidence.lines(
            art,
            "tinker_native/data.py",
            "if all(abs(reward - rewards[0]) <= 1e-12 for reward in rewards[1:]):",
        ),
        _evidence.function(art, "tinker_native/data.py", "compute_advantages"),
    ]
    claims = {
        TINKER: _evidence.claim(not found.holds, detail, method="ran", at=at, domain=found.domain())
    }
    packed, ran = packed_claims(art)
    claims.update(packed)
    return {
        "claims": claims,
        "detail": "; ".join(c["detail"] for c in claims.values()),
        "ran": _tinker_datums.ran(art) + ran,
        "method": "ran",
    }


def packed_claims(art: Any) -> tuple[dict[str, Any], list[str]]:
    """The packed path's two claims (``_grpo_property``'s domains, through item 3's path:
    ART's ``LocalBackend._prepare_training_batch``, its tokenizer and packer, ``_grpo_art``)."""

    def step(groups: list[list[float]], **config: Any) -> dict[str, Any]:
        return _grpo_art.step(art, groups, **config)

    with _grpo_art.loaded(art):
        found = item03.search_claims(_grpo_property.FOLLOW_UP, step, art)
        ran = _grpo_art.ran(art)
    at, dropped = item03.where_at(art)
    return {
        cid: _evidence.claim(
            not found[cid].holds,
            f"{found[cid].summary()}; {item03.first_case(art, cid)}",
            method="ran",
            at=at,
            fix=dropped,
            domain=found[cid].domain(),
        )
        for cid in _grpo_property.FOLLOW_UP
    }, ran


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
