"""Item 8, a fake fix on 0.5.20: a comment naming the clamp above ``exp``. artbot's control."""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        "^(    prob_ratio = torch\\.exp\\(logprob_diff\\)\\n)",
        "    # prob_ratio = torch.exp(logprob_diff.clamp(-20.0, 20.0))\\n\\g<1>",
    ),
]
EXPECT = {"inf-loss-nan-gradients": "reproduced"}
