"""Item 8, a real fix on 0.5.20 written unlike the clamp: where the log-ratio is not finite or
above 10, the log-ratio is taken as 0 and the ratio as 1 (the token treated as on-policy), by a
``torch.where`` before the token's and the sequence's ratios (every importance-sampling level),
so no inf reaches exp or its backward. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"^    prob_ratio = torch\.exp\(logprob_diff\)\n",
        "    safe = torch.isfinite(logprob_diff) & (logprob_diff <= 10.0)\n"
        "    logprob_diff = torch.where(safe, logprob_diff, 0.0)\n"
        "    prob_ratio = torch.where(safe, torch.exp(logprob_diff), 1.0)\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "fixed"}
