"""Item 8, a fake fix on 0.5.20 that holds on part of the domain: non-finite old logprobs
replaced, and the log-ratio clamped just below FP32's exp overflow (88): the ratio is finite,
but e^88 times an advantage above 2 is not, and in FP16 e^88 is already inf. artbot's control
(issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"(\n        )torch\.isnan\(old_logprobs\),",
        r"\g<1>~torch.isfinite(old_logprobs),",
    ),
    (
        "loss.py",
        r"^    prob_ratio = torch\.exp\(logprob_diff\)\n",
        r"    prob_ratio = torch.exp(logprob_diff.clamp(max=88.0))\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
