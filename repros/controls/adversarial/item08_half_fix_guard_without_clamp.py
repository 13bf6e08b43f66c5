"""Item 8, half a fix (the issue's): 0.5.21's ``-inf`` guard kept, the clamp before ``exp``
removed: an old logprob of -9999 still overflows. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "loss.py",
        "prob_ratio = torch\\.exp\\(logprob_diff\\.clamp\\(-log_ratio_bound, log_ratio_bound\\)\\)",
        "prob_ratio = torch.exp(logprob_diff)",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
