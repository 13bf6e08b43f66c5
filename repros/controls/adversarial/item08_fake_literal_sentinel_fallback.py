"""Item 8, a fake fix on 0.5.20 that holds on part of the domain: the NaN fallback extended to
-inf and to the literal sentinel -9999 (the records' two values), with no clamp: any other
finite old logprob far below the new one (-9999.5, -1e4, new - 100) still overflows exp.
artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"(\n        )torch\.isnan\(old_logprobs\),",
        r"\g<1>torch.isnan(old_logprobs) | torch.isneginf(old_logprobs)"
        r" | (old_logprobs == -9999.0),",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
