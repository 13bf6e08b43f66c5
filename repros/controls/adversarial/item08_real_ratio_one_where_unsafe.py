"""Item 8, a real fix on 0.5.20 written unlike the clamp: where the log-ratio is not finite or
above 10, the ratio is 1 (the token treated as on-policy), through a double ``torch.where`` so
no inf reaches exp's backward. artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"^    prob_ratio = torch\.exp\(logprob_diff\)\n",
        "    safe = torch.isfinite(logprob_diff) & (logprob_diff <= 10.0)\n"
        "    prob_ratio = torch.where(\n"
        "        safe, torch.exp(torch.where(safe, logprob_diff, 0.0)), 1.0\n"
        "    )\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "fixed"}
