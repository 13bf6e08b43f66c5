"""Models the cited lines, not ART's code; ART's own function is run by `artbot verify`.
That check: check_art in repros/item401_unsloth_bf16_logits.py, on ART's _calculate_logprobs.

Follow-up 401 (artbot's, after #1109's fix): ART's default Unsloth backend makes its logits in
BF16 and upcasts them afterwards, so item 4's rounding applies there too.

ART in openpipe-art 0.5.23, unsloth/train.py#L659 and #L665 (_calculate_logprobs), roughly:
    lm_head_t = lm_head_t.to(hidden_states.dtype)                      # BF16 in training
    chunk_logits = torch.matmul(chunk_hs, lm_head_t).float()           # L665
    chunk_log_probs = torch.log_softmax(chunk_logits, dim=-1)
This copies those lines on random BF16 operands whose logits reach about 58, with each target
token sampled from the FP32 distribution (as a policy's own tokens are), so it runs without ART.
ARTBOT_FIX=1 applies artbot's suggested fix: the matmul in FP32.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
g = torch.Generator().manual_seed(0)
hidden = torch.randn(1, 64, 256, generator=g).to(torch.bfloat16)
lm_head_t = (torch.randn(256, 4096, generator=g) * 0.8).to(torch.bfloat16)
exact_logits = hidden.float() @ lm_head_t.float()
ids = torch.multinomial(torch.softmax(exact_logits[0], -1), 1, generator=g).unsqueeze(0)

if FIX:
    chunk_logits = torch.matmul(hidden.float(), lm_head_t.float())
else:
    chunk_logits = torch.matmul(hidden, lm_head_t).float()  # as released
logprobs = torch.log_softmax(chunk_logits, dim=-1).gather(-1, ids)
exact = torch.log_softmax(exact_logits, -1).gather(-1, ids)
err = (logprobs - exact).abs().flatten()
p50, p90 = err.quantile(0.5).item(), err.quantile(0.9).item()
top = chunk_logits.abs().max().item()
print(f"BF16 operands, logits up to {top:.0f}, sampled targets{' (fix applied)' * FIX}:")
print(f"logprob |error| p50 {p50:.3f}, p90 {p90:.3f}, max {err.max().item():.3f} nats")
print("verdict: " + ("fixed" if p90 <= 0.01 else "reproduced"))
