"""Item 7, a real fix on 0.5.20 written unlike 0.5.21's: the TIS multiplication kept in place,
its weight 1.0 when original_logprobs is missing (a conditional expression, no new branch).
artbot's control (issue #37).
"""

KIND = "real"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"\n(        )policy_loss \*= torch\.clamp\(prob_ratio, max=upper_bound\)\.detach\(\)\n",
        "\n\\g<1>policy_loss *= (\n"
        "\\g<1>    torch.clamp(prob_ratio, max=upper_bound).detach()\n"
        "\\g<1>    if aligned_inputs.original_logprobs is not None\n"
        "\\g<1>    else 1.0\n"
        "\\g<1>)\n",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "fixed"}
