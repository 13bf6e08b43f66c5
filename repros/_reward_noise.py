"""Near-equal rewards: rewards equal by construction that differ only by float noise (item 3's
fixed groups; the noisy groups that item 1001 and the GRPO properties draw).

A trajectory's reward is often a sum of per-step rewards. Two trajectories that earned the same
steps have the same reward, but a sum taken in another order can come out one ulp apart: at
rewards near 1e4 one ulp is 1.8e-12, past 0.5.21's absolute 1e-12 tolerance
(``rewards_have_zero_variance``: ``abs(reward - first) <= 1e-12``); near 1 it is 2.2e-16,
inside it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Any

# Four per-step rewards; summed forwards and backwards they are one ulp (1.8e-12) apart.
STEPS_AT_1E4 = (2391.2, 2386.8, 2324.4, 2335.2)
# The same at reward 1: 1.0 and 0.9999999999999999, 1.1e-16 apart.
STEPS_AT_1 = (0.1, 0.2, 0.3, 0.4)
SCALES = (1.0, 10.0, 100.0, 1e3, 3e3, 1e4, 1e5)
GROUPS, TRAJECTORIES, STEPS = 1000, 4, 8


def summed_two_ways(steps: Sequence[float]) -> list[float]:
    """Three trajectories summing ``steps`` forwards and one backwards: equal by construction."""
    return [sum(steps)] * 3 + [sum(reversed(steps))]


def groups_at(scale: float, seed: int = 0) -> list[list[float]]:
    """``GROUPS`` groups of ``TRAJECTORIES`` rewards, each the same ``STEPS`` per-step rewards
    (uniform, summing to about ``scale``) added in a shuffled order."""
    rng = random.Random(seed)
    out = []
    for _ in range(GROUPS):
        steps = [rng.uniform(0.0, 2.0 * scale / STEPS) for _ in range(STEPS)]
        group = []
        for _ in range(TRAJECTORIES):
            rng.shuffle(steps)
            group.append(sum(steps))
        out.append(group)
    return out


def kept_by_scale(zero_variance: Callable[[Sequence[float]], bool]) -> dict[float, int]:
    """Per scale, how many of ``GROUPS`` equal-by-construction groups ``zero_variance`` keeps
    (calls not zero-variance)."""
    return {s: sum(not zero_variance(g) for g in groups_at(s)) for s in SCALES}


def reordered_sums(rng: Any, n: int, value: float) -> list[float]:
    """``n`` rewards, each the same 2-8 random per-step shares of ``value`` summed in a shuffled
    order (``rng``: a ``random.Random``)."""
    weights = [rng.random() for _ in range(rng.randint(2, 8))]
    steps = [value * w / sum(weights) for w in weights]
    group = []
    for _ in range(n):
        rng.shuffle(steps)
        group.append(sum(steps))
    return group


def ulp_neighbours(rng: Any, n: int, value: float) -> list[float]:
    """``value`` and ``n - 1`` float64 neighbours of it, each 0-8 ulps away."""
    group = [value]
    for _ in range(n - 1):
        v = value
        for _ in range(rng.randint(0, 8)):
            v = math.nextafter(v, rng.choice((math.inf, -math.inf)))
        group.append(v)
    return group
