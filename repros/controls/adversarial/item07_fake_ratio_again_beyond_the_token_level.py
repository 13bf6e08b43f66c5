"""Item 7, a fake fix that holds on part of the domain (found by the red team of issue #37):
0.5.21's skip is kept, but an ``elif`` applies the policy ratio again whenever
``importance_sampling_level`` is not "token" (sequence, average, geometric_average), so without
original_logprobs the loss is still multiplied by min(r, U) there. artbot's control.
"""

KIND = "fake"
RELEASES = ("0.5.21", "0.5.23")
EDITS = [
    (
        "loss.py",
        r"\n(        )else:\n(            warnings\.warn\(\n"
        r"                \"Skipping truncated importance sampling)",
        '\n\\g<1>elif importance_sampling_level != "token":\n'
        "\\g<1>    policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()\n"
        "\\g<1>else:\n\\g<2>",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
