"""Audit item 10: tinker_native must normalize GRPO advantages with the population standard
deviation, as ART's other backends do, and give an equal-reward group no advantage.

The first test is a property over compute_advantages called itself, one group at a time:
group sizes 2-128 and reward scales 1e-3 to 1e8 (seeded draws of 0/1, two-point and uniform
rewards, FP32 values). Oracle: the float64 population-std advantage, (r - mean) / population std
of the same rewards. Tolerance: 4 n eps(fp32) (1 + max|r|/std), 4 n FP32 ulps scaled by the
group's conditioning; with ``normalize_advantages=False``, r - mean within 4 n ulps of
max|r|. artbot's check holds ART to the same contract through ``trajectory_groups_to_datums``,
the caller that builds the datums; this test calls ``compute_advantages`` itself, so a change
made in the caller is not covered here."""

import math
import random

import pytest

try:  # torch and ART's optional dependencies may be absent where ART's tests run: skip
    import torch

    from art.tinker_native.data import compute_advantages
except ModuleNotFoundError as missing:  # one of ART's own modules missing is a failure
    if (missing.name or "art").partition(".")[0] == "art":
        raise
    pytest.skip(f"{missing.name} is not installed", allow_module_level=True)

EPS32 = torch.finfo(torch.float32).eps


def _groups() -> list[list[float]]:
    rng = random.Random(10)
    groups = [[0.0, 1.0], [0.0, 0.0, 0.0, 1.0]]
    while len(groups) < 200:
        n = rng.randint(2, 128)
        scale = 10 ** rng.uniform(-3, 8)
        offset = scale * rng.choice((0.0, rng.uniform(-3.0, 3.0)))
        kind = rng.choice((lambda: rng.randint(0, 1), lambda: rng.choice((0.25, 1.0)), rng.random))
        rewards = torch.tensor([offset + scale * kind() for _ in range(n)], dtype=torch.float32)
        if len(set(rewards.tolist())) > 1:
            groups.append([float(r) for r in rewards.tolist()])
    return groups


def test_advantages_use_the_population_std() -> None:
    for rewards in _groups():
        mean = math.fsum(rewards) / len(rewards)
        std = math.sqrt(math.fsum((r - mean) ** 2 for r in rewards) / len(rewards))
        expected = [(r - mean) / std for r in rewards]
        tolerance = 4 * len(rewards) * EPS32 * (1 + max(map(abs, rewards)) / std)
        got = compute_advantages(rewards)
        assert got == pytest.approx(expected, rel=0, abs=tolerance), rewards


def test_unnormalized_advantages_are_the_centred_rewards() -> None:
    for rewards in _groups():
        mean = math.fsum(rewards) / len(rewards)
        tolerance = 4 * len(rewards) * EPS32 * max(map(abs, rewards))
        got = compute_advantages(rewards, normalize_advantages=False)
        assert got == pytest.approx([r - mean for r in rewards], rel=0, abs=tolerance), rewards


@pytest.mark.parametrize("rewards", [[0.22] * 3, [0.15] * 8])
def test_equal_rewards_get_no_advantage(rewards: list[float]) -> None:
    assert compute_advantages(rewards) == pytest.approx([0.0] * len(rewards), abs=1e-6)
