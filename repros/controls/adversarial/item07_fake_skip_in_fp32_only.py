"""Item 7, a fake fix on 0.5.20 that holds on part of the domain: TIS is skipped without
original_logprobs only for FP32 logprobs; with BF16 or FP16 ones the policy ratio is applied
again. artbot's control (issue #37).
"""

KIND = "fake"
RELEASES = ("0.5.20",)
EDITS = [
    (
        "loss.py",
        r"\n(        )policy_loss \*= torch\.clamp\(prob_ratio, max=upper_bound\)\.detach\(\)\n",
        "\n\\g<1>if (\n"
        "\\g<1>    aligned_inputs.original_logprobs is not None\n"
        "\\g<1>    or new_logprobs.dtype != torch.float32\n"
        "\\g<1>):\n"
        "\\g<1>    policy_loss *= torch.clamp(prob_ratio, max=upper_bound).detach()\n",
    ),
]
EXPECT = {"policy-ratio-applied-twice": "reproduced"}
