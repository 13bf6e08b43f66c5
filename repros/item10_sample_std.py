"""Item 10: tinker_native normalizes advantages by the sample standard deviation.

Models two ART functions as released in openpipe-art 0.5.20 (the audit's commit e2a406a48 is
in no release; it lies between 0.5.20 and 0.5.21):
- ``compute_advantages`` in ``art/tinker_native/data.py`` lines 32-44: rewards as an FP32 tensor,
  centred on the mean, divided by ``rewards_tensor.std()``, which is torch's sample (n - 1)
  standard deviation; zeros when that std is not above 1e-8.
- the GRPO advantage in ``art/preprocessing/tokenize.py`` lines 746-755, used by the other
  backends: Python floats, population (n) standard deviation, ``advantage /= reward_std + 1e-6``.

What is measured: for groups of n = 2, 4 and 8 rewards, the ratio of tinker_native's advantage to
the population-std advantage, element by element. The arithmetic says
sqrt((n - 1) / n) * (1 + 1e-6 / std_pop) (the 1e-6 is tokenize.py's guard); the audit gives 0.87
at n = 4. The fixed form is what ART 0.5.21 ships: ``std(unbiased=False)`` and, before it, a guard
that returns zeros when all rewards are equal (within 1e-12); the ratio is then 1 up to
tokenize.py's 1e-6.

Also measured: groups whose rewards are all equal but not exactly representable in FP32 (0.22 x 3,
0.15 x 8). They should get no advantage. In 0.5.20 they do: the FP32 mean of three FP32 0.22s
is one ulp (2**-26) below 0.22, so every element of ``centered`` is +1.5e-8; torch's ``std()``
of the same tensor is 1.8e-8, above the 1e-8 guard, and the division gives every member
+sqrt((n - 1) / n): +0.8165 on [0.22] x 3, +0.9354 on [0.15] x 8. A population std alone would
give +1.0 there; 0.5.21's equality guard returns exact zeros, as does the float64 population path.

Assumptions:
- ``scale_rewards`` is on in tokenize.py and ``normalize_advantages=True`` in tinker_native (their
  defaults), so both normalize.
- Rewards are either 0/1 (pass/fail) or uniform on [0, 1]; the ratio does not depend on the draw.
  Equal-reward groups are measured separately (``measure_equal_groups``), not in the ratios.

``measure(impl=...)`` takes any callable with the signature of ART's
``compute_advantages(rewards: list[float], normalize_advantages: bool = True) -> list[float]``.
"""

from __future__ import annotations

import itertools
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
import _domain  # noqa: E402
import _evidence  # noqa: E402
import _tinker_datums  # noqa: E402

GROUP_SIZES = (2, 4, 8)
GROUPS_PER_KIND = 32
AUDIT_RATIO = {4: 0.87}


def make_compute_advantages(
    *, fixed: bool, dtype: torch.dtype = torch.float32
) -> Callable[..., list[float]]:
    """tinker_native's ``compute_advantages`` as in 0.5.20, or (``fixed``) as in 0.5.21 (and
    0.5.23); ``dtype``: the rewards tensor's (ART's is FP32; item 1001's fix is float64)."""

    def compute_advantages(rewards: list[float], normalize_advantages: bool = True) -> list[float]:
        if not rewards:
            return []
        # 0.5.21 returns zeros for a group of equal rewards before any FP32 arithmetic.
        if fixed and all(abs(r - rewards[0]) <= 1e-12 for r in rewards[1:]):
            return [0.0] * len(rewards)
        rewards_tensor = torch.tensor(rewards, dtype=dtype)
        centered = rewards_tensor - rewards_tensor.mean()
        if not normalize_advantages:
            return centered.tolist()
        # data.py#L41: 0.5.20's std() is the sample (n - 1) std; 0.5.21 passes unbiased=False.
        std_reward = rewards_tensor.std(unbiased=not fixed)
        if std_reward > 1e-8:
            return (centered / std_reward).tolist()
        return [0.0] * len(rewards)

    return compute_advantages


compute_advantages = make_compute_advantages(fixed=False)
compute_advantages_fixed = make_compute_advantages(fixed=True)

# Equal rewards that FP32 does not hold exactly: the mean of the FP32 values is an ulp off.
EQUAL_GROUPS = ([0.22] * 3, [0.15] * 8, [0.0] * 4, [1.0] * 4)
# Equal up to float noise: 2e-12 apart, outside 0.5.21's 1e-12 equality guard; the three are
# one and the same FP32 value, so the FP32 arithmetic that follows sees an equal group.
NEAR_EQUAL_GROUPS = ([0.22, 0.22, 0.22 + 2e-12],)


def population_std_advantages(rewards: list[float]) -> list[float]:
    """The other backends' GRPO advantage (tokenize.py#L746-L755, ``scale_rewards=True``)."""
    reward_mean = sum(rewards) / len(rewards)
    reward_std = math.sqrt(sum((r - reward_mean) ** 2 for r in rewards) / len(rewards))
    return [(r - reward_mean) / (reward_std + 1e-6) for r in rewards]


def draw_groups(n: int, gen: torch.Generator) -> list[list[float]]:
    """Reward groups of size ``n`` with at least two distinct values: 0/1 and uniform draws."""
    groups: list[list[float]] = []
    while len(groups) < GROUPS_PER_KIND:
        binary = torch.randint(0, 2, (n,), generator=gen).to(torch.float64).tolist()
        if len(set(binary)) > 1:
            groups.append(binary)
    while len(groups) < 2 * GROUPS_PER_KIND:
        groups.append(torch.rand(n, generator=gen, dtype=torch.float64).tolist())
    return groups


def measure(
    impl: Callable[..., list[float]] | None = None,
    *,
    group_sizes: tuple[int, ...] = GROUP_SIZES,
    seed: int = 0,
) -> dict[str, Any]:
    """Per group size: each group's rewards, both advantages and their elementwise ratio.

    ``impl`` has the signature of ART's ``compute_advantages(rewards, normalize_advantages=True)``.
    """
    impl = impl or compute_advantages
    gen = _common.seed_everything(seed)
    out: dict[str, Any] = {}
    for n in group_sizes:
        groups = []
        for rewards in draw_groups(n, gen):
            tinker = impl(rewards, normalize_advantages=True)
            population = population_std_advantages(rewards)
            # Elements at the mean (advantage 0 on both paths) carry no ratio.
            ratios = [t / p for t, p in zip(tinker, population, strict=True) if abs(p) > 1e-9]
            groups.append(
                {
                    "rewards": rewards,
                    "advantages": tinker,
                    "population": population,
                    "ratios": ratios,
                }
            )
        all_ratios = torch.tensor([r for g in groups for r in g["ratios"]], dtype=torch.float64)
        out[str(n)] = {
            "groups": groups,
            "ratio_median": float(all_ratios.median()),
            "ratio_min": float(all_ratios.min()),
            "ratio_max": float(all_ratios.max()),
        }
    return out


def measure_equal_groups(
    impl: Callable[..., list[float]] | None = None,
    groups: tuple[list[float], ...] = EQUAL_GROUPS,
) -> list[dict[str, Any]]:
    """Advantages of groups whose rewards are all equal (or ``groups``), on ``impl`` and the
    population path."""
    impl = impl or compute_advantages
    return [
        {
            "rewards": rewards,
            "advantages": impl(list(rewards), normalize_advantages=True),
            "population": population_std_advantages(list(rewards)),
        }
        for rewards in groups
    ]


def max_equal_group_advantage(groups: list[dict[str, Any]]) -> float:
    """Largest |advantage| given to any member of an equal-reward group."""
    return max(abs(a) for g in groups for a in g["advantages"])


def is_reproduced(measured: dict[str, Any]) -> bool:
    """The finding holds when the two conventions differ by more than 1% at every group size."""
    return all(abs(m["ratio_median"] - 1.0) > 0.01 for m in measured.values())


def build_report() -> _common.Report:
    """Item 10: tinker_native's advantage scale against the population-std backends."""
    as_cited = measure(compute_advantages)
    fixed = measure(compute_advantages_fixed)
    report = _common.Report(
        item="10",
        title="tinker_native uses the sample standard deviation for advantages",
        models="art/tinker_native/data.py compute_advantages as released in 0.5.20 (lines 32-44; "
        "audit: tinker_native/data.py#L32-L44 at e2a406a48) against "
        "art/preprocessing/tokenize.py GRPO advantages (0.5.20 lines 746-755)",
        setting={
            "group sizes n": list(GROUP_SIZES),
            "groups per n": f"{GROUPS_PER_KIND} of 0/1 rewards, {GROUPS_PER_KIND} uniform [0, 1]",
            "tinker_native": "FP32, torch.std() (n - 1), normalize_advantages=True",
            "other backends": "float64, population std (n), + 1e-6, scale_rewards=True",
        },
    )
    for n in GROUP_SIZES:
        m, f = as_cited[str(n)], fixed[str(n)]
        report.measure(
            f"n={n}: advantage ratio tinker_native / population-std (median)",
            m["ratio_median"],
            fixed=f["ratio_median"],
            audit=AUDIT_RATIO.get(n),
            note=f"range {m['ratio_min']:.6f}-{m['ratio_max']:.6f}; "
            f"sqrt((n-1)/n) = {math.sqrt((n - 1) / n):.6f}",
        )
    equal_cited = measure_equal_groups(compute_advantages)
    equal_fixed = measure_equal_groups(compute_advantages_fixed)
    for cited_group, fixed_group in zip(equal_cited, equal_fixed, strict=True):
        rewards = cited_group["rewards"]
        report.measure(
            f"equal rewards [{rewards[0]}] x {len(rewards)}: advantages",
            sorted(set(cited_group["advantages"])),
            fixed=sorted(set(fixed_group["advantages"])),
            note="population-std path: "
            + ", ".join(f"{x:.3g}" for x in sorted(set(cited_group["population"]))),
        )
    near_cited = measure_equal_groups(compute_advantages, NEAR_EQUAL_GROUPS)
    near_fixed = measure_equal_groups(compute_advantages_fixed, NEAR_EQUAL_GROUPS)
    for cited_group, fixed_group in zip(near_cited, near_fixed, strict=True):
        report.measure(
            f"near-equal rewards {cited_group['rewards']}: advantages",
            cited_group["advantages"],
            fixed=fixed_group["advantages"],
            note="2e-12 apart, outside the 1e-12 equality guard; one FP32 value",
        )
    report.note(
        "Equal-reward groups should get no advantage. The ratio verdict does not use them: an "
        "FP32 reward that is not exact (0.22, 0.15) gives every member +sqrt((n - 1) / n) on "
        "0.5.20, a second effect of the same function. 0.5.21's equality guard removes it for "
        "rewards within 1e-12 of each other only: rewards 2e-12 apart, one and the same FP32 "
        "value, still get +1 each with 0.5.21's form."
    )
    report.reproduced = is_reproduced(as_cited)
    return report


# The claim as a property (issues #37, #50): over this domain, the advantage each trajectory's
# tokens get in the datums ART trains on (``trajectory_groups_to_datums``, the only caller of
# ``compute_advantages``, entered as the backend enters it) is the population-std advantage (the
# analytic value, float64, of the same FP32 rewards) within a tolerance in FP32 ulps scaled by
# the group's conditioning; with ``normalize_advantages=False``, the centred reward r - mean
# within 4 n ulps of max|r|. One input is one training step: several groups, each judged.
# The domain is ART's, not the counterexample's (issue #53, the review's fakes): rewards as a
# scorer gives them (0.1, 0.37: FP32 rounds them; the oracle is that of the FP32 values ART's
# tensor holds), and steps of as many groups as a run's groups_per_step (128 x 8).
COVERS = (
    "trajectory_groups_to_datums, normalize_advantages True and False; 1-128 groups a step of "
    "2-1,024 trajectories (a step of 128 x 8, a step of 32 x 8, a group of 128, a group of "
    "1,024); reward scales 1e-3 to 1e8 with offsets; 0/1, two-point, uniform rewards; "
    "rewards FP32 holds exactly and rewards it rounds (0.1, 0.37: decimal rewards); every pair "
    "of (normalize, kind, scale) in some input; oracle: float64 population-std advantage (or "
    "r - mean) of the FP32 rewards; tolerance 4 sqrt(n) eps(fp32) (1 + max|r|/std)"
)
SIZES = (2, 3, 4, 5, 8, 16, 31, 64, 128)
SCALES = (1e-3, 1.0, 7.0, 1e3, 1.5e6, 1e8)
KINDS = ("binary", "two-point", "uniform")
LARGEST = 1024  # the largest group drawn (ART sets no limit)
MOST_GROUPS = 128  # the most groups a step drawn (a run's groups_per_step; ART sets no limit)
MAX_INPUTS = 80


def fp32(values: list[float]) -> list[float]:
    """The values as FP32 holds them (what ART's tensor sees), as Python floats."""
    return [float(v) for v in torch.tensor(values, dtype=torch.float32).tolist()]


def population_z(rewards: list[float]) -> tuple[list[float], float]:
    """The analytic advantage: (r - mean) / population std, in float64; and that std."""
    mean = math.fsum(rewards) / len(rewards)
    std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / len(rewards))
    return [(r - mean) / std for r in rewards], std


def in_domain(rewards: list[float]) -> bool:
    """At least two distinct FP32 values and a spread well above the 1e-8 std floor."""
    held = fp32(rewards)
    if len(held) < 2 or len(set(held)) < 2:
        return False
    return population_z(held)[1] > 1e-6


def expected(rewards: list[float], normalize: bool) -> tuple[list[float], float]:
    """The oracle's advantages of one group (the rewards as ART's FP32 tensor holds them) and
    the tolerance they are held to."""
    rewards = fp32(rewards)
    z, std = population_z(rewards)
    top = max(map(abs, rewards))
    if normalize:
        bound = 4 * math.sqrt(len(rewards)) * _domain.ulps(torch.float32) * (1 + top / std)
        return z, bound
    mean = math.fsum(rewards) / len(rewards)
    return [r - mean for r in rewards], 4 * len(rewards) * _domain.ulps(torch.float32) * top


def group_error(spans: list[Any] | None, rewards: list[float], normalize: bool) -> Any:
    """A ``_domain.Failure`` when a group's token advantages (per trajectory, the least and
    greatest of its tokens': ``_tinker_datums.spans``) leave the oracle's tolerance (a group
    with no datum has advantage 0 on every trajectory), else None."""
    want, bound = expected(rewards, normalize)
    worst = 0.0
    for i, target in enumerate(want):
        span = spans[i] if spans is not None else [0.0, 0.0]
        if span is None:
            return _domain.Failure(f"trajectory {i} got no trained token", "one datum each")
        for value in span:
            value = float(value)
            worst = max(worst, abs(value - target) if math.isfinite(value) else math.inf)
    return _domain.Failure(float(f"{worst:.4g}"), float(f"{bound:.3g}")) if worst > bound else None


def measure_step(run: Callable[..., Any], case: dict[str, Any]) -> dict[str, Any]:
    """The split's measuring half (issue #53): one step's datums through ``run`` (in the
    check's process), as ``_tinker_datums.spans``; ``raised`` when it raised."""
    try:
        got = run(case["groups"], normalize_advantages=bool(case["normalize_advantages"]))
    except Exception as exc:  # a crash on valid groups is a failure of the property
        return {"raised": f"{type(exc).__name__}: {exc}"[:200]}
    return {"groups": _tinker_datums.spans(got)}


def judge(case: dict[str, Any], raw: dict[str, Any]) -> Any:
    """The property on one measured step (pure): the first group whose advantages leave the
    tolerance."""
    if "raised" in raw:
        return _domain.Failure(f"raised {raw['raised'].split(':')[0]}", "datums")
    if len(raw["groups"]) != len(case["groups"]):
        return _domain.Failure(f"{len(raw['groups'])} groups measured", len(case["groups"]))
    for rewards, spans in zip(case["groups"], raw["groups"], strict=True):
        failure = group_error(spans, rewards, case["normalize_advantages"])
        if failure is not None:
            return failure
    return None


def draw_rewards(rng: Any, n: int, scale: float, kind: str) -> list[float]:
    """One group's rewards: 0/1 and two-point ones FP32 holds (with an offset, as FP32 values);
    uniform ones as a scorer gives them, to two decimals (0.37: FP32 rounds them)."""
    offset = scale * rng.choice((0.0, 0.0, rng.uniform(-3.0, 3.0)))
    while True:
        if kind == "binary":
            rewards = fp32([offset + scale * rng.randint(0, 1) for _ in range(n)])
        elif kind == "two-point":
            rewards = fp32([offset + scale * rng.choice((0.25, 1.0)) for _ in range(n)])
        else:
            rewards = [offset + scale * round(rng.random(), 2) for _ in range(n)]
        if in_domain(rewards):
            return rewards


def _step(normalize: bool, groups: list[list[float]]) -> dict[str, Any]:
    return {
        "normalize_advantages": normalize,
        "group sizes": [len(g) for g in groups],
        "groups": groups,
    }


def _sample(rng: Any) -> dict[str, Any]:
    count = rng.choice((1, 2, 4, rng.randint(1, 16), rng.randint(1, MOST_GROUPS)))
    groups = []
    wide = LARGEST if count <= 4 else 128  # groups past 128 in steps of up to 4 groups (time)
    for _ in range(count):
        n = rng.choice((rng.randint(2, 128), rng.choice(SIZES), rng.randint(2, wide)))
        n = n if count <= 16 else rng.randint(2, 16)  # a step of many groups: GRPO's sizes
        scale = rng.choice((10 ** rng.uniform(-3, 8), rng.choice(SCALES)))
        groups.append(draw_rewards(rng, n, scale, rng.choice(KINDS)))
    return _step(rng.random() < 0.5, groups)


def _edges() -> list[dict[str, Any]]:
    """The audit's groups first, then a covering array: every (normalize, kind, scale) in one
    step (so every pair of them occurs), group sizes cycling up to 128; then the largest
    steps, 32 groups of 8 and a group of 128, both ways, a group of 1,024, and a step of
    128 groups of 8 with decimal rewards."""
    rng = random.Random(10)
    audit = [[0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [0.0, 1.0] * 2, [0.0, 1.0] * 32]
    out = [_step(True, audit)]
    for i, (normalize, kind, scale) in enumerate(itertools.product((True, False), KINDS, SCALES)):
        sizes = (SIZES[i % len(SIZES)], SIZES[(i + 4) % len(SIZES)])
        out.append(_step(normalize, [draw_rewards(rng, n, scale, kind) for n in sizes]))
    for normalize in (True, False):
        many = [draw_rewards(rng, 8, rng.choice(SCALES), rng.choice(KINDS)) for _ in range(32)]
        out.append(_step(normalize, many))
        out.append(_step(normalize, [draw_rewards(rng, 128, 1.0, "binary")]))
    # ART sets no limit on a group's size (issue #50: a fake gated past 128 was judged fixed).
    out.append(_step(True, [draw_rewards(rng, LARGEST, 1.0, "uniform")]))
    # A run's step of many groups (issue #53: a fake gated past 32 groups was judged fixed).
    many = [draw_rewards(rng, 8, 1.0, rng.choice(KINDS)) for _ in range(MOST_GROUPS)]
    out.append(_step(True, many))
    return out


def _shrink(case: dict[str, Any]) -> list[dict[str, Any]]:
    """One group alone, then that group shorter or with its rewards rounded."""
    groups = case["groups"]
    if len(groups) > 1:
        return [_step(case["normalize_advantages"], [g]) for g in groups]
    rewards = groups[0]
    out = [r for r in _domain.shorter(rewards, 2) if in_domain(r)]
    rounded = fp32([float(f"{r:.2g}") for r in rewards])
    if rounded != rewards and in_domain(rounded):
        out.append(rounded)
    return [_step(case["normalize_advantages"], [r]) for r in out]


DRAWS = MAX_INPUTS - len(_edges())
# How artbot judges the claim, outside the check's process (issue #53).
ORACLES = {
    "sample-std-advantages": _domain.Oracle(judge=judge, edges=_edges, sample=_sample, draws=DRAWS)
}


def search_domain(run: Callable[..., Any], channel: Any = None, *, seed: int = 0) -> Any:
    """The property searched over COVERS: ``_domain.Found``. ``run(groups,
    normalize_advantages=...)`` gives per group, per trajectory, its tokens' advantages (None:
    the group got no datum): ``_tinker_datums.advantages`` on a tree. Taped on ``channel``
    (the check's ``art``)."""
    return _domain.search(
        covers=COVERS,
        edges=_edges(),
        sample=_sample,
        measure=lambda case: measure_step(run, case),
        judge=judge,
        claim="sample-std-advantages",
        channel=channel,
        shrink=_shrink,
        seed=seed,
        max_inputs=MAX_INPUTS,
    )


def check_art(art: Any) -> dict[str, Any]:
    """The property over COVERS through ART's ``trajectory_groups_to_datums`` (see artbot's
    verify and ``_tinker_datums``): the advantages ART trains on, not ``compute_advantages``
    alone, so that a fix or a fake in the caller counts; artbot judges the taped outputs again
    (``ORACLES``)."""

    def run(groups: list[list[float]], *, normalize_advantages: bool) -> Any:
        return _tinker_datums.advantages(art, groups, normalize_advantages=normalize_advantages)

    found = search_domain(run, art)
    measured = measure(_tinker_datums.one_group(run))
    ratios = ", ".join(f"n={n}: {m['ratio_median']:.4f}" for n, m in measured.items())
    detail = (
        f"{found.summary()}; advantage ratio to the population-std backends (median, the "
        f"datums' advantages) {ratios}"
    )
    at = [
        _evidence.function(art, "tinker_native/data.py", "compute_advantages"),
        _evidence.lines(
            art,
            "tinker_native/data.py",
            "advantages = compute_advantages(rewards, normalize_advantages)",
        ),
    ]
    fix = [
        _evidence.lines(
            art,
            "tinker_native/data.py",
            "if all(abs(reward - rewards[0]) <= 1e-12 for reward in rewards[1:]):",
            "std_reward = rewards_tensor.std(unbiased=False)",
        )
    ]
    claim = _evidence.claim(
        not found.holds, detail, method="ran", at=at, fix=fix, domain=found.domain()
    )
    return {
        "claims": {"sample-std-advantages": claim},
        "detail": detail,
        "ran": _tinker_datums.ran(art),
        "method": "ran",
    }


if __name__ == "__main__":
    raise SystemExit(_common.run(build_report))
