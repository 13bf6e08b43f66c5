"""Models the cited lines, not ART's code; ART's own loss_fn is run by `artbot verify`.
That check: check_art in repros/item07_tis_fallback.py, on ART's art.loss.loss_fn.

Item 7: with TIS set and no original_logprobs, loss is multiplied by clamp(prob_ratio, max=U).

ART at e2a406a48, src/art/loss.py#L375-L385 (ART's own code: art.loss.loss_fn), roughly:
    if truncated_importance_sampling is not None:
        ...  # original_logprobs absent: falls back to prob_ratio
        policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()
This models that step on its own, so it runs without ART.
ARTBOT_FIX=1 applies ART 0.5.21's fix: skip TIS when original_logprobs is absent.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
U = 2.0  # truncated_importance_sampling upper bound
old = torch.zeros(5)
new = torch.log(torch.tensor([0.5, 0.8, 1.0, 1.25, 1.5])).requires_grad_()
advantage = 1.0

prob_ratio = torch.exp(new - old)
eps, eps_high = 1.0, 4.0  # ART's CISPO defaults (0.5.20 loss.py L315-L320): clip to [0, 5]
cispo = -(torch.clamp(prob_ratio, 1 - eps, 1 + eps_high).detach() * advantage * new)
with_tis = cispo if FIX else cispo * torch.clamp(prob_ratio, max=U).detach()  # the fallback
(g_plain,) = torch.autograd.grad(cispo.sum(), new, retain_graph=True)
(g_tis,) = torch.autograd.grad(with_tis.sum(), new)
print(f"ratio:                  {[round(r, 3) for r in prob_ratio.tolist()]}")
print(f"token weight, no TIS:   {[round(-g, 3) for g in g_plain.tolist()]}")
twice = "" if FIX else "  (ratio applied twice)"
print(f"token weight, TIS set:  {[round(-g, 3) for g in g_tis.tolist()]}{twice}")
print("verdict: " + ("reproduced" if not torch.allclose(g_plain, g_tis) else "fixed"))
