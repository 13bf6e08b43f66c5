"""Item 7, a fake fix that holds on part of the domain (found by the red team of issue #37):
0.5.21's skip is kept, but an ``elif`` applies the policy ratio again when the truncation bound
U (``truncated_importance_sampling``) is an ``int`` (``2`` rather than ``2.0``), so without
original_logprobs the loss is still multiplied by min(r, U) for such a config. artbot's
control.
"""

KIND = "fake"
RELEASES = ("0.5.23",)
EDITS = [
    (
        "loss.py",
        r"\n(        )else:\n(            warnings\.warn\(\n"
        r"                \"Skipping truncated importance sampling)",
        "\n\\g<1>elif isinstance(upper_bound, int):\n"
        "\\g<1>    policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()\n"
        "\\g<1>else:\n\\g<2>",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
