"""Models the cited lines, not ART's code; ART's own loss_fn is run by `artbot verify`.
That check: check_art in repros/item08_unclamped_exp.py, on ART's art.loss.loss_fn.

Item 8: the PPO ratio exp(new - old) is not clamped; one -inf old logprob gives a NaN step.

ART at e2a406a48, src/art/loss.py#L299 and #L363-L367 (ART's own code: art.loss.loss_fn), roughly:
    old_logprobs = torch.where(torch.isnan(old_logprobs), new_logprobs.detach(), old_logprobs)
    prob_ratio = torch.exp(new_logprobs - old_logprobs)
    policy_loss = -torch.min(prob_ratio * A, torch.clip(prob_ratio, 1 - eps, 1 + eps_high) * A)
This models those lines (token level, mean over trainable tokens), so it runs without ART.
ARTBOT_FIX=1 applies ART 0.5.21's fix (loss.py L291-L302): non-finite old logprobs replaced by the
new ones, as NaN ones are, and the log-ratio clamped to +-20 before exp.
"""

import math
import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
g = torch.Generator().manual_seed(0)
logits = torch.randn(4, 16, generator=g).requires_grad_()  # 4 trainable tokens, vocab 16
targets = torch.randint(0, 16, (4, 1), generator=g)
drift = 0.05 * torch.randn(4, generator=g)  # a little off-policy drift on the finite tokens


def loss_and_grad(ppo: bool, advantage: float, bad: float | None = -math.inf) -> tuple[float, bool]:
    new = torch.log_softmax(logits, -1).gather(1, targets).squeeze(1)
    old = new.detach() + drift
    if bad is not None:
        old[1] = bad  # one bad old logprob (-inf, or a sentinel such as -9999)
    missing = ~torch.isfinite(old) if FIX else torch.isnan(old)  # as released: only NaN
    old = torch.where(missing, new.detach(), old)
    log_ratio = new - old
    ratio = torch.exp(log_ratio.clamp(-20, 20) if FIX else log_ratio)
    if ppo:  # epsilon 0.2 / 0.2
        loss = -torch.min(ratio * advantage, torch.clip(ratio, 0.8, 1.2) * advantage)
    else:  # CISPO, epsilon 1.0 / 4.0
        loss = -(torch.clip(ratio.detach(), 0.0, 5.0) * advantage * new)
    (grad,) = torch.autograd.grad(loss.mean(), logits)
    return loss.mean().item(), bool(grad.isfinite().all())


ppo_loss, ppo_grad_ok = loss_and_grad(ppo=True, advantage=-1.0)
cispo_loss, cispo_grad_ok = loss_and_grad(ppo=False, advantage=-1.0)
control, _ = loss_and_grad(ppo=True, advantage=-1.0, bad=None)  # every old logprob finite
print(f"old logprob -inf on one token, A = -1{', 0.5.21 fix applied' if FIX else ''}:")
print(
    f"PPO:   loss {ppo_loss:.3g} (every old logprob finite: {control:.3g}), "
    f"logits gradient finite: {ppo_grad_ok}"
)
print(f"CISPO: loss {cispo_loss:.3g}, logits gradient finite: {cispo_grad_ok}")
sane = abs(ppo_loss) <= 2 * abs(control)  # a sane loss: within 2x of the all-finite step's
print("verdict: " + ("fixed" if ppo_grad_ok and sane else "reproduced"))
