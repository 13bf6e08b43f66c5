# Python 3.12, CPU: pip install openpipe-art==0.5.20 torch
import torch
from art.loss import AlignedLossInputs, loss_fn

new = torch.tensor([[-1.0, -0.5, -2.0]])  # 3 trainable tokens
old = new - torch.tensor([[0.4, -0.3, 0.2]])  # policy ratios 1.49, 0.74, 1.22
ones = torch.ones(1, 3)
batch = {"assistant_mask": ones.bool(), "weights": ones, "group_ids": ones.long()}
inputs = AlignedLossInputs(old_logprobs=old, advantages=ones, **batch)  # no original_logprobs
config = {"ppo": False}
plain = loss_fn(inputs, new, None, None, config).policy_loss.item()
tis = loss_fn(inputs, new, None, None, config | {"truncated_importance_sampling": 2.0})
print(f"policy loss, no TIS: {plain:.4f}; TIS set, no original_logprobs: {tis.policy_loss:.4f}")
print("verdict: " + ("fixed" if abs(tis.policy_loss.item() - plain) <= 1e-6 else "reproduced"))
