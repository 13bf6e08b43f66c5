"""Audit item 10: tinker_native must normalize GRPO advantages with the population standard
deviation, as ART's other backends do, and give an equal-reward group no advantage."""

import pytest

from art.tinker_native.data import compute_advantages


def test_advantages_use_the_population_std() -> None:
    # Rewards 0 and 1: population std 0.5, so advantages are -1 and +1 (sample std: ±0.7071).
    assert compute_advantages([0.0, 1.0]) == pytest.approx([-1.0, 1.0])


@pytest.mark.parametrize("rewards", [[0.22] * 3, [0.15] * 8])
def test_equal_rewards_get_no_advantage(rewards: list[float]) -> None:
    assert compute_advantages(rewards) == pytest.approx([0.0] * len(rewards), abs=1e-6)
