"""Follow-up 801, a real fix written differently from ``item801.py`` (the finding's second
suggestion): old logprobs below a sentinel threshold (-1000) are replaced like non-finite ones,
whatever the log-ratio. artbot's control.
"""

KIND = "real"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        "~torch.isfinite(old_logprobs) | (old_logprobs < -1000.0),",
    ),
]
EXPECT = {"sentinel-dominates-loss": "fixed"}
