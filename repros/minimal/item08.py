# Python 3.12, CPU: pip install openpipe-art==0.5.20 torch
import torch
from art.loss import AlignedLossInputs, loss_fn


def ppo_step(old_logprob: float) -> tuple[float, bool]:
    logits = torch.tensor([[0.3, -0.2, 0.9]], requires_grad=True)
    new = torch.nn.functional.logsigmoid(logits)  # 3 trainable tokens' logprobs
    old = new.detach().clone()
    old[0, 1] = old_logprob
    ones = torch.ones(1, 3)
    batch = {"assistant_mask": ones.bool(), "weights": ones, "group_ids": ones.long()}
    inputs = AlignedLossInputs(old_logprobs=old, advantages=-ones, **batch)
    loss = loss_fn(inputs, new, None, None, {"ppo": True}).policy_loss
    loss.backward()
    return loss.item(), bool(torch.isfinite(logits.grad).all())


(loss, finite), (ordinary, _) = ppo_step(float("-inf")), ppo_step(-0.5)
print(f"PPO, A = -1, old logprob -inf on 1 of 3 tokens: loss {loss} (all finite: {ordinary:.4g})")
print(f"logits gradient finite: {finite}")
print("verdict: " + ("fixed" if abs(loss) < float("inf") and finite else "reproduced"))
