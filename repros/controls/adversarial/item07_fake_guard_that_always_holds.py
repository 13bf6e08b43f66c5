"""Item 7, a fake fix on 0.5.20: the TIS factor under an ``if`` that always holds
(``if upper_bound is not None or True``). artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        "^        policy_loss \\*= torch\\.clamp\\(prob_ratio, max=upper_bound\\)\\.det"
        "ach\\(\\)\\n",
        "        if upper_bound is not None or True:  # skip TIS without original_logpr"
        "obs\n            policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detac"
        "h()\n",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
