"""Audit item 8: an old logprob of -inf (or a sentinel such as -9999) must not turn a PPO step
with a negative advantage into an inf loss and NaN gradients."""

import pytest
import torch

from art.loss import AlignedLossInputs, loss_fn


@pytest.mark.parametrize("old", [float("-inf"), -9999.0])
def test_ppo_loss_and_gradients_stay_finite(old: float) -> None:
    new = torch.tensor([[-1.5]], dtype=torch.float32, requires_grad=True)
    inputs = AlignedLossInputs(
        assistant_mask=torch.ones(1, 1, dtype=torch.bool),
        old_logprobs=torch.tensor([[old]], dtype=torch.float32),
        advantages=torch.tensor([[-1.0]], dtype=torch.float32),
        weights=torch.ones(1, 1, dtype=torch.float32),
        group_ids=torch.ones(1, 1, dtype=torch.int64),
    )
    loss = loss_fn(inputs, new, None, None, {"ppo": True}).policy_loss
    assert torch.isfinite(loss), loss
    loss.backward()
    assert new.grad is not None and torch.isfinite(new.grad).all(), new.grad
