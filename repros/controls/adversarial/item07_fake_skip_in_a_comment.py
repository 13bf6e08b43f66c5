"""Item 7, a fake fix on 0.5.20: a comment naming the skip above the TIS factor.
artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        "^(        policy_loss \\*= torch\\.clamp\\(prob_ratio, max=upper_bound\\)\\.de"
        "tach\\(\\)\\n)",
        "        # skip TIS when original_logprobs is None\\n\\g<1>",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
