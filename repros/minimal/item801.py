"""Models the cited lines, not ART's code; ART's own loss_fn is run by `artbot verify`.
That check: check_art in repros/item801_ppo_sentinel_loss.py, on ART's art.loss.loss_fn.

Follow-up 801 (artbot's, after item 8's fix): a finite sentinel old logprob such as -9999 is not
replaced, so the +-20 clamp turns it into a ratio of exp(20) that dominates the PPO loss.

ART in openpipe-art 0.5.23, loss.py#L291-L295 and #L301-L302 (art.loss.loss_fn), roughly:
    old_logprobs = torch.where(~torch.isfinite(old_logprobs), new_logprobs.detach(), old_logprobs)
    prob_ratio = torch.exp(logprob_diff.clamp(-log_ratio_bound, log_ratio_bound))  # bound 20
    policy_loss = -torch.min(prob_ratio * A, torch.clip(prob_ratio, 1 - eps, 1 + eps_high) * A)
This models those lines (token level, mean over trainable tokens), so it runs without ART.
ARTBOT_FIX=1 applies artbot's suggested fix: an old logprob whose log-ratio reaches the bound is
treated as missing, as a non-finite one is.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"


def ppo_step(bad: float | None) -> tuple[float, float]:
    new = torch.tensor([-1.2, -0.7, -2.1], requires_grad=True)  # 3 trainable tokens
    old = new.detach().clone()
    if bad is not None:
        old[1] = bad  # a sentinel old logprob on token 1
    missing = ~torch.isfinite(old)  # as released in 0.5.21 and 0.5.23
    if FIX:
        missing |= (new.detach() - old) >= 20
    old = torch.where(missing, new.detach(), old)
    ratio = torch.exp((new - old).clamp(-20, 20))
    advantage = -1.0
    loss = -torch.min(ratio * advantage, torch.clip(ratio, 0.8, 1.2) * advantage).mean()
    loss.backward()
    assert new.grad is not None
    return loss.item(), new.grad[1].item()


loss, grad = ppo_step(-9999.0)
control, _ = ppo_step(None)  # every old logprob finite
print(f"PPO, A = -1, old logprob -9999 on 1 of 3 tokens{' (fix applied)' if FIX else ''}:")
print(f"loss {loss!r} (every old logprob finite: {control!r}), gradient on that token {grad:.3g}")
print("verdict: " + ("fixed" if abs(loss) <= 2 * abs(control) else "reproduced"))
