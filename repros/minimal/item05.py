"""Item 5: each backward call's LoRA gradient is added in BF16 (e2a406a48
trainer_rank/_versions.py#L43-L51); torch's AccumulateGrad on a BF16 leaf does the same here,
without ART. ARTBOT_FIX=1: an FP32 LoRA leaf.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
# Smaller than the full script's LoRA (2560 x 2560, rank 8): the gradient of A_T (512 x 8), each
# call a BF16 GEMM (FP32 accumulation, one rounding) of 64 tokens, sharing a rank-8 direction.
D, RANK, TOKENS = 512, 8, 64
g = torch.Generator().manual_seed(0)
shared = torch.randn(D, RANK, generator=g) / D**0.5
leaf = torch.zeros(D, RANK, dtype=torch.float32 if FIX else torch.bfloat16, requires_grad=True)
truth = torch.zeros(D, RANK, dtype=torch.float64)
errors: list[float] = []
for call in range(1, 257):
    x = torch.randn(TOKENS, D, generator=g)
    upstream = (x @ shared + torch.randn(TOKENS, RANK, generator=g)) / 2**0.5
    grad = (x.bfloat16().float().T @ upstream.bfloat16().float()).bfloat16()  # this call's gradient
    leaf.backward(grad.to(leaf.dtype))  # AccumulateGrad: leaf.grad += grad in the leaf's dtype
    truth += grad.double()  # the same per-call gradients summed in float64
    if call in (16, 256):
        errors.append(float((leaf.grad.double() - truth).norm() / truth.norm()))
e16, e256 = errors
print(f"LoRA gradient accumulated in {leaf.dtype}, vs a float64 sum of the same per-call grads:")
print(f"relative L2 error: {100 * e16:.2g}% after 16 calls, {100 * e256:.2g}% after 256")
# Reproduced when 16 calls leave at least a tenth of one BF16 rounding (2**-9) and it grows.
print("verdict: " + ("reproduced" if 2**-9 / 10 <= e16 < e256 else "fixed"))
