"""Follow-up 1001, a real fix written unlike the suggested guard: the arithmetic in float64 and
the std floor made relative to the rewards' magnitude (1e-9 of the largest |reward|, at least
1e-8), the equality guard left as it is. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "tinker_native/data.py",
        r"torch\.tensor\(rewards, dtype=torch\.float32\)",
        "torch.tensor(rewards, dtype=torch.float64)",
    ),
    (
        "tinker_native/data.py",
        r"if std_reward > 1e-8:",
        "if std_reward > max(1e-8, 1e-9 * float(rewards_tensor.abs().max())):",
    ),
]
EXPECT = {"near-equal-group-full-advantage": "fixed"}
