"""Follow-up 801, a fake fix that holds on part of the domain: the fallback also replaces the
literal -9999 (the record's sentinel), and nothing else; -9999.5, -1e4 or an old logprob 25
below the new one are still clamped to e^20. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"~torch\.isfinite\(old_logprobs\),",
        "~torch.isfinite(old_logprobs) | (old_logprobs == -9999.0),",
    ),
]
EXPECT = {"sentinel-dominates-loss": "reproduced"}
