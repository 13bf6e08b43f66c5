"""artbot follow-up 801 (after audit item 8's fix): a finite sentinel old logprob (-9999) on one
trainable token must not dominate a PPO step's loss. Strict xfail while it does (0.5.21 and
0.5.23 give 161721728.0 against 1.0); it fails as an unexpected pass the day it is fixed."""

import pytest
import torch

from art.loss import AlignedLossInputs, loss_fn


def ppo_loss(old_logprob_1: float | None) -> torch.Tensor:
    new = torch.tensor([[-1.2, -0.7, -2.1]], dtype=torch.float32, requires_grad=True)
    old = new.detach().clone()
    if old_logprob_1 is not None:
        old[0, 1] = old_logprob_1
    inputs = AlignedLossInputs(
        assistant_mask=torch.ones(1, 3, dtype=torch.bool),
        old_logprobs=old,
        advantages=torch.full((1, 3), -1.0),
        weights=torch.ones(1, 3),
        group_ids=torch.ones(1, 3, dtype=torch.int64),
    )
    return loss_fn(inputs, new, None, None, {"ppo": True}).policy_loss


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="artbot follow-up 801 is open")
def test_a_sentinel_old_logprob_does_not_dominate_the_ppo_loss() -> None:
    control = ppo_loss(None).item()
    loss = ppo_loss(-9999.0).item()
    assert abs(loss) <= 2 * abs(control), (loss, control)
