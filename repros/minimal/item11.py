"""Item 11: the LoRA delta is added to the BF16 base in BF16 (e2a406a48
megatron/lora.py#L1019-L1020, #L1414); this models that forward without ART. ARTBOT_FIX=1: the
same delta added in FP32.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
# Smaller than the full script (2560 wide, vocab 4096): a 512 x 512 projection, 64 tokens, rank 8,
# scale 4, then an FP32-exact head (vocab 1024, logit std 3) scoring targets sampled at T = 1.
D, T, V, R, SCALE, LR = 512, 64, 1024, 8, 4.0, 5e-6
g = torch.Generator().manual_seed(0)
x = torch.randn(T, D, generator=g).bfloat16()
base = (x.float() @ (torch.randn(D, D, generator=g) / D**0.5).bfloat16().float().T).bfloat16()
a_t = ((torch.rand(D, R, generator=g) * 2 - 1) / D**0.5).bfloat16()  # PEFT's init, B = 0
head = torch.randn(V, D, generator=g).double() * (3 / D**0.5)
targets = torch.multinomial(torch.softmax(base.double() @ head.T, -1), 1, generator=g)


def logprobs(out: torch.Tensor) -> torch.Tensor:  # float64 after the add: only the add differs
    return torch.log_softmax(out.double() @ head.T, -1).gather(1, targets).squeeze(1)


xa = (x.float() @ a_t.float()).bfloat16()
b_t = torch.zeros(R, D, dtype=torch.float64, requires_grad=True)
logprobs(base.double() + xa.double() @ b_t * SCALE).sum().backward()
b_new = (LR * b_t.grad.sign()).bfloat16()  # Adam's first step from B = 0: lr * sign(grad)
delta = (xa @ b_new) * SCALE  # LoRA.forward, BF16
out = base.float() + delta.float() if FIX else base + delta
change = logprobs(out) - logprobs(base)
change_fp32 = logprobs(base.float() + delta.float()) - logprobs(base)
lost = 1 - float((change * change_fp32).sum() / change_fp32.square().sum())
size = float(delta.float().square().mean().sqrt() / base.float().square().mean().sqrt())
kept = float(((out.float() != base.float()) & (delta != 0)).float().sum() / (delta != 0).sum())
print(
    f"one Adam step from B = 0: delta RMS {size:.2g} of the base's; {'FP32' if FIX else 'BF16'} add"
)
print(f"the output changes at {kept:.1%} of the delta's nonzero elements")
print(f"target-logprob change lost against an FP32 add: {lost:.1%}")
print("verdict: " + ("reproduced" if lost > 0.1 else "fixed"))  # more than 10% lost
