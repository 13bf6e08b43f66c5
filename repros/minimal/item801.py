# Python 3.12, CPU: pip install openpipe-art==0.5.23 torch
import torch
from art.loss import AlignedLossInputs, loss_fn


def ppo_loss(old_logprob: float) -> float:
    new = torch.tensor([[-1.2, -0.7, -2.1]], requires_grad=True)  # 3 trainable tokens
    old = new.detach().clone()
    old[0, 1] = old_logprob
    ones = torch.ones(1, 3)
    batch = {"assistant_mask": ones.bool(), "weights": ones, "group_ids": ones.long()}
    inputs = AlignedLossInputs(old_logprobs=old, advantages=-ones, **batch)
    return loss_fn(inputs, new, None, None, {"ppo": True}).policy_loss.item()


sentinel, ordinary = ppo_loss(-9999.0), ppo_loss(-0.7)
print(f"PPO, A = -1, old logprob -9999 on 1 of 3 tokens: loss {sentinel} (all finite: {ordinary})")
bound = 2 * 1.2 / 3  # the Expected's bound
print("verdict: " + ("fixed" if abs(sentinel - ordinary) <= bound else "reproduced"))
