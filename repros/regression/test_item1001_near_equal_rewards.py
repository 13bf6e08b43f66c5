"""artbot follow-up 1001 (after audit item 10's fix): rewards equal up to float noise must get no
advantage from tinker_native's compute_advantages. Strict xfail while they do ([0.22, 0.22,
0.22 + 2e-12] gets [1.0, 1.0, 1.0] on 0.5.21 and 0.5.23); it fails as an unexpected pass once
fixed."""

import pytest

from art.tinker_native.data import compute_advantages


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="artbot follow-up 1001 is open")
def test_a_group_equal_up_to_float_noise_gets_no_advantage() -> None:
    advantages = compute_advantages([0.22, 0.22, 0.22 + 2e-12])
    assert max(abs(a) for a in advantages) <= 1e-6, advantages
