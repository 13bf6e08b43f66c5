"""Item 8, a fix that holds on part of the domain (the audit's suggestion taken literally):
non-finite old logprobs replaced and the log-ratio clamped to +-20 whatever its dtype. In FP32
and BF16 that holds; with FP16 logprobs exp(20) = 4.85e8 overflows FP16 (max 65504), so a
sentinel gives an infinite loss (0.5.21 uses +-10 in FP16 for this reason). artbot's control
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
        r"    prob_ratio = torch.exp(logprob_diff.clamp(-20.0, 20.0))\n",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
