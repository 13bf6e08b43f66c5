# Python 3.12, CPU: pip install "openpipe-art[tinker]==0.5.20"
import statistics

from art.tinker_native.data import compute_advantages

rewards = [1.0, 0.0, 0.0, 1.0]
mean, std = statistics.fmean(rewards), statistics.pstdev(rewards)  # population std
other_backends = [(r - mean) / std for r in rewards]
advantages = compute_advantages(rewards)
print(f"tinker_native: {[round(a, 4) for a in advantages]}; other backends: {other_backends}")
sample_std_ratio = ((len(rewards) - 1) / len(rewards)) ** 0.5
print(f"ratio {advantages[0] / other_backends[0]:.4f} (a sample std: {sample_std_ratio:.4f})")
close = all(abs(a - b) <= 1e-6 for a, b in zip(advantages, other_backends, strict=True))
print("verdict: " + ("fixed" if close else "reproduced"))
