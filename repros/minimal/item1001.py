"""Models the cited lines, not ART's code; ART's own function is run by `artbot verify`.
That check: check_art in repros/item1001_tinker_native_equal_guard.py, on ART's
art.tinker_native.data.compute_advantages.

Follow-up 1001 (artbot's, after item 10's fix): the equal-reward guard is an absolute 1e-12, so
rewards equal up to float noise get a full-scale advantage, #1110's symptom on tinker_native.

ART in openpipe-art 0.5.23, tinker_native/data.py#L37-L38 and #L39-L45 (compute_advantages):
    if all(abs(reward - rewards[0]) <= 1e-12 for reward in rewards[1:]):
        return [0.0] * len(rewards)
    rewards_tensor = torch.tensor(rewards, dtype=torch.float32)
    centered = rewards_tensor - rewards_tensor.mean()
    std_reward = rewards_tensor.std(unbiased=False)
    if std_reward > 1e-8:
        return (centered / std_reward).tolist()
This copies that arithmetic, so it runs without ART. ARTBOT_FIX=1 applies artbot's suggested
fix: the same arithmetic in float64.
"""

import os

import torch

FIX = os.environ.get("ARTBOT_FIX") == "1"


def compute_advantages(rewards: list[float]) -> list[float]:
    if all(abs(reward - rewards[0]) <= 1e-12 for reward in rewards[1:]):
        return [0.0] * len(rewards)
    rewards_tensor = torch.tensor(rewards, dtype=torch.float64 if FIX else torch.float32)
    centered = rewards_tensor - rewards_tensor.mean()
    std_reward = rewards_tensor.std(unbiased=False)
    if std_reward > 1e-8:
        return (centered / std_reward).tolist()
    return [0.0] * len(rewards)


rewards = [0.22, 0.22, 0.22 + 2e-12]  # equal up to float noise: one and the same FP32 value
advantages = compute_advantages(rewards)
print(f"rewards {rewards}{' (fix applied)' if FIX else ''}:")
print(f"advantages {[round(a, 4) for a in advantages]}")
# How often: groups of n: n - 1 rewards r = k/1000 (k = 1..1000) and one r + 2e-12.
hits = {
    n: sum(
        max(map(abs, compute_advantages([k / 1000] * (n - 1) + [k / 1000 + 2e-12]))) > 0.5
        for k in range(1, 1001)
    )
    for n in (3, 4, 8)
}
shown = ", ".join(f"{hit} (n = {n})" for n, hit in hits.items())
print(f"rewards k/1000, one member + 2e-12: full-scale advantages for {shown} of 1000")
print("verdict: " + ("fixed" if max(abs(a) for a in advantages) <= 1e-6 else "reproduced"))
