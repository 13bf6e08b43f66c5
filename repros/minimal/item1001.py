# Python 3.12, CPU: pip install "openpipe-art[tinker]==0.5.23"
from art.tinker_native.data import compute_advantages

rewards = [0.22, 0.22, 0.22 + 2e-12]  # equal up to float noise
advantages = compute_advantages(rewards)
print(f"{rewards}: advantages {advantages}")
hits = []
for n in (3, 4, 8):
    groups = ([k / 1000] * (n - 1) + [k / 1000 + 2e-12] for k in range(1, 1001))
    hits.append(f"{sum(max(map(abs, compute_advantages(g))) > 0.5 for g in groups)} (n = {n})")
print(f"full-scale advantages for {', '.join(hits)} of 1000 groups")
print("verdict: " + ("fixed" if max(map(abs, advantages)) <= 1e-6 else "reproduced"))
