"""Audit item 7: without original_logprobs, truncated importance sampling must not reweight
the policy loss by the policy ratio (it has no sampler logprobs to correct for)."""

import math
import warnings

import pytest
import torch

from art.loss import AlignedLossInputs, loss_fn


def one_token(ratio: float, advantage: float) -> tuple[AlignedLossInputs, torch.Tensor]:
    new = torch.tensor([[-1.5]], dtype=torch.float32, requires_grad=True)
    old = new.detach() - math.log(ratio)
    inputs = AlignedLossInputs(
        assistant_mask=torch.ones(1, 1, dtype=torch.bool),
        old_logprobs=old,
        advantages=torch.tensor([[advantage]], dtype=torch.float32),
        weights=torch.ones(1, 1, dtype=torch.float32),
        group_ids=torch.ones(1, 1, dtype=torch.int64),
    )
    return inputs, new


@pytest.mark.parametrize("ppo", [True, False], ids=["ppo", "cispo"])
@pytest.mark.parametrize("advantage", [1.0, -1.0])
@pytest.mark.parametrize("ratio", [0.5, 1.5, 3.0])
def test_tis_without_original_logprobs_leaves_the_loss_unchanged(
    ppo: bool, advantage: float, ratio: float
) -> None:
    plain = loss_fn(*one_token(ratio, advantage), None, None, {"ppo": ppo}).policy_loss
    config = {"ppo": ppo, "truncated_importance_sampling": 2.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a release may warn that it skips TIS
        with_tis = loss_fn(*one_token(ratio, advantage), None, None, config).policy_loss
    torch.testing.assert_close(with_tis, plain)
