"""Item 4: the LM head's GEMM stores BF16 logits (e2a406a48
trainer_rank/_impl.py#L5948-L5971); this models that head without ART. ARTBOT_FIX=1: FP32
logits.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
# 128 tokens, 32 candidate logits each: the top one in [35, 47), the others min(s_t * G_k, 30)
# below it (G_k: running sums of Exp(1); s_t = 2.87 exp(N(0, 1)), the full script's calibration).
V, H, T, C = 8192, 2560, 128, 32
g = torch.Generator().manual_seed(0)
weight = (torch.randn(V, H, generator=g) / H**0.5).bfloat16().float()
ids = torch.stack([torch.randperm(V, generator=g)[:C] for _ in range(T)])
top = 35 + 12 * torch.rand(T, 1, generator=g)
gaps = torch.cat([torch.zeros(T, 1), (-torch.rand(T, C - 1, generator=g).log()).cumsum(1)], 1)
gaps = (2.87 * torch.randn(T, 1, generator=g).exp() * gaps).clamp(max=30)
rows = weight[ids].double()  # least-norm hidden rows giving those candidate logits
coef = torch.linalg.solve(rows @ rows.transpose(1, 2), (top - gaps).double()[..., None])
hidden = (rows.transpose(1, 2) @ coef).squeeze(-1).bfloat16().float()

logits64 = hidden.double() @ weight.double().T  # float64 reference head
logp64 = torch.log_softmax(logits64, -1)
target = torch.multinomial(logp64.exp(), 1, generator=g)  # sampled at T = 1
logits = hidden @ weight.T  # FP32 accumulation ...
if not FIX:
    logits = logits.bfloat16()  # ... stored as BF16, as the output layer does
logp = torch.log_softmax(logits.float(), -1)  # everything after the head is FP32
err = (logp.gather(1, target) - logp64.gather(1, target)).abs().squeeze(1).double()
p50, p90, p99 = torch.quantile(err, torch.tensor([0.5, 0.9, 0.99], dtype=torch.float64)).tolist()
p_t, ent = logp64.gather(1, target).exp().median(), -(logp64.exp() * logp64).sum(1).mean()
print(f"{'FP32' if FIX else 'BF16'} logits; median p_target {p_t:.2f}, mean entropy {ent:.2f} nats")
print(f"per-token logprob error vs float64: p50 {p50:.2g}, p90 {p90:.2g}, p99 {p99:.2g} nats")
print(f"tokens off by more than 0.1 nats: {int((err > 0.1).sum())} of {T}")
# Reproduced when the p99 error is at least a quarter of BF16's 0.125 rounding at logits 32-64.
print("verdict: " + ("reproduced" if p99 >= 0.125 / 4 else "fixed"))
