"""Models the cited lines, not ART's code; ART's compute_advantages is run by `artbot verify`.
That check: check_art in repros/item10_sample_std.py, on tinker_native/data.py's function.

Item 10: tinker_native normalizes advantages by the sample std (n-1); other backends use n.

ART at e2a406a48: tinker_native/data.py#L32-L44 calls torch.std(rewards) (unbiased, n-1);
preprocessing/tokenize.py#L763-L771 divides by the population std (n). Runs without ART.
ARTBOT_FIX=1 applies the suggested fix: one convention (the population std) everywhere.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"
rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])  # one group, n = 4
centered = rewards - rewards.mean()
tinker_native = centered / torch.std(rewards, unbiased=not FIX)  # default: unbiased (n-1)
other_backends = centered / torch.std(rewards, unbiased=False)  # population (n)
ratio = (tinker_native / other_backends)[0].item()
expected = ((4 - 1) / 4) ** 0.5
print(f"tinker_native advantages: {tinker_native.tolist()}")
print(f"other backends:           {other_backends.tolist()}")
print(f"ratio {ratio:.4f} (sqrt((n-1)/n) = {expected:.4f})")
print("verdict: " + ("reproduced" if abs(ratio - 1) > 1e-3 else "fixed"))
