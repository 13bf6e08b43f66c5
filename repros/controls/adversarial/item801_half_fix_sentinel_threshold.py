"""Follow-up 801, a fix that holds on part of the domain (the finding's second suggestion taken
literally): old logprobs below a sentinel threshold (-1000) are replaced like non-finite ones.
Every sentinel below -1000 is handled, but an old logprob 21 to ~1000 below the new one (past
the bound, not past the threshold) is still clamped to e^20 and dominates the loss: the claim's
domain is any finite old logprob beyond the bound (issue #37), not the sentinels alone. It was
judged a real fix when the check tried -9999 only. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        "~torch.isfinite(old_logprobs) | (old_logprobs < -1000.0),",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
