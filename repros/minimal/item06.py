"""Models TrainerRank's AdamW step, not ART's code; ART's own step, TrainerRank.optim_step, is
run by `artbot verify`. That check: check_art in repros/item06_adam_eps.py, on trainer_rank/*.py.

Item 6: TrainerRank's AdamW gets no eps (PyTorch's 1e-8); the Megatron backend uses 1e-13.

ART at e2a406a48, src/art/trainer_rank/_optimizer.py#L423-L428 builds torch.optim.AdamW(lr,
betas, weight_decay) with no eps (AdamParams, _impl.py#L120-L126, has none); megatron/train.py#L283
sets adam_eps=1e-13. This runs the real torch AdamW on a LoRA pair, without ART.
ARTBOT_FIX=1 applies the suggested fix: an AdamParams eps, set to Megatron's 1e-13.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
LR, BETAS, WD, CLIP = 5e-6, (0.9, 0.99), 0.1, 0.1  # both backends' defaults
D, RANK, SCALE, TOKENS = 2560, 8, 2.0, 256  # one rank-8 LoRA on a 2560 x 2560 projection
# The global grad norm covers Qwen3-4B's 16,515,072 LoRA parameters (36 layers x q/k/v/o/gate/up/
# down, rank 8), each taken to have this module's gradient RMS: norm * sqrt(16515072 / 40960).
NORM_SCALE = (16_515_072 / (RANK * 2 * D)) ** 0.5


def a_update(eps: float, steps: int = 2) -> tuple[torch.Tensor, float]:
    """Train A (PEFT init) and B (= 0) for `steps` clipped AdamW steps; A's last update."""
    g = torch.Generator().manual_seed(0)
    a = torch.nn.Parameter((torch.rand(D, RANK, generator=g) * 2 - 1) / D**0.5)
    b = torch.nn.Parameter(torch.zeros(RANK, D))
    opt = torch.optim.AdamW([a, b], lr=LR, betas=BETAS, weight_decay=WD, eps=eps)
    for _ in range(steps):  # step 1: A's gradient is 0 (B = 0), so A first moves on step 2
        x, grad_y = torch.randn(TOKENS, D, generator=g), torch.randn(TOKENS, D, generator=g) * 1e-3
        (SCALE * (x @ a) @ b * grad_y).sum().backward()
        norm = NORM_SCALE * float(torch.cat([a.grad.flatten(), b.grad.flatten()]).norm())
        for p in (a, b):
            p.grad.mul_(min(1.0, CLIP / (norm + 1e-6)))  # TrainerRank's global clip
        grad_a, before = float(a.grad.abs().median()), a.detach().clone()
        opt.step()
        opt.zero_grad()
    return a.detach() - before * (1 - LR * WD), grad_a  # Adam's step, weight decay undone


trainer_rank, grad_a = a_update(1e-13 if FIX else 1e-8)
megatron, _ = a_update(1e-13)
ratio = float((trainer_rank / megatron).abs().median())
print(f"LoRA A's first update: median |grad A| after clipping {grad_a:.2g}, next to eps 1e-8")
print(f"TrainerRank eps {'1e-13' if FIX else '1e-8'}: median |update A| is {ratio:.2f}x Megatron's")
print("verdict: " + ("reproduced" if ratio < 0.9 else "fixed"))  # damped by more than 10%
